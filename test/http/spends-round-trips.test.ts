// PostgreSQL round trips of one Authorize, counted at the pg client as the server (in this process)
// sends them on the decision's connection (other connections poll for changes meanwhile). Before the
// decision: the Idempotency-Key's claim (the caller's principal is cached). The decision's
// transaction: BEGIN, the fund policy's shared lock (its currency stays until commit), the layers'
// read, the window's lock with the held sum (one function call), the authorization with its ledger
// entry (one statement), the idempotent answer, COMMIT.
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchPgQueries } from "../../bench/servers/pg-queries.js";
import { testDialect } from "../support/database.js";
import { appWithLimit, authorized, money, startSpendServer, type SpendServer } from "./spends-helpers.js";

const sent: { client: pg.Client; text: string }[] = [];
let stopWatching: (() => void) | undefined;
let server: SpendServer;

describe.skipIf(testDialect() !== "postgres")("Authorize's round trips (PostgreSQL)", () => {
  beforeAll(async () => {
    stopWatching = watchPgQueries((client, text) => sent.push({ client, text }));
    server = await startSpendServer();
  });
  afterAll(async () => {
    stopWatching?.();
    await server?.ts.stop();
  });

  it.each([
    { what: "a hold", extra: {}, expected: 7 },
    // The window's spent counter too.
    { what: "a direct spend", extra: { capture: true }, expected: 8 },
    // The declined authorization is kept, without a ledger entry.
    { what: "a decline", extra: { amount: money("1000") }, expected: 7 },
  ])("$what: the decision in $expected round trips, one transaction", async ({ extra, expected }) => {
    const { admin, spend, subject } = server;
    const app = await appWithLimit(admin, subject.userId, "100");
    await authorized(spend, { userId: subject.userId, appId: app, amount: money("1") });
    sent.length = 0;
    const answer = await spend.authorize({ userId: subject.userId, appId: app, amount: money("1"), ...extra });
    expect(answer.response.status).toBe(200);
    const begin = sent.find((s) => /^begin/i.test(s.text));
    expect(begin).toBeDefined();
    const onIt = sent.filter((s) => s.client === begin!.client).map((s) => s.text);
    const decision = onIt.slice(onIt.findIndex((s) => /^begin/i.test(s)), onIt.findIndex((s) => /^commit/i.test(s)) + 1);
    if (process.env.SHOW_ROUND_TRIPS) console.log(sent.map((s) => s.text.slice(0, 140)).join("\n"));
    expect(decision.length, decision.join("\n")).toBe(expected);
  });
});
