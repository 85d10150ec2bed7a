// PostgreSQL round trips of one Authorize or Capture, counted at the pg client as the server (in this process)
// sends them on the decision's connection (other connections poll for changes meanwhile). Nothing
// before the decision (the caller's principal is cached; the Idempotency-Key takes no claim). The decision's
// transaction: BEGIN with the fund policy's shared lock (its currency stays until commit) and the
// layers' read after it (one simple query: BEGIN and one function call), the window's lock with the
// sweep of its expired holds (one function call), the authorization with its ledger entry, the spent counter of a
// direct spend and the idempotent answer (one function call), COMMIT.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { testDialect } from "../support/database.js";
import { appWithLimit, authorized, money, watchingQueries } from "./spends-helpers.js";

const watched = watchingQueries();
const { sent } = watched;

describe.skipIf(testDialect() !== "postgres")("Authorize's and Capture's round trips (PostgreSQL)", () => {

  /** The texts sent on the transaction's connection, from its BEGIN to its COMMIT. */
  function transaction(): string[] {
    const begin = sent.find((s) => /^begin/i.test(s.text));
    expect(begin).toBeDefined();
    const onIt = sent.filter((s) => s.client === begin!.client).map((s) => s.text);
    if (process.env.SHOW_ROUND_TRIPS) console.log(sent.map((s) => s.text.slice(0, 140)).join("\n"));
    return onIt.slice(onIt.findIndex((s) => /^begin/i.test(s)), onIt.findIndex((s) => /^commit/i.test(s)) + 1);
  }

  it.each([
    { what: "a hold", extra: {}, expected: 4 },
    // The window's spent counter too, in the same call.
    { what: "a direct spend", extra: { capture: true }, expected: 4 },
    // The declined authorization is kept, without a ledger entry.
    { what: "a decline", extra: { amount: money("1000") }, expected: 4 },
  ])("$what: the decision in $expected round trips, one transaction", async ({ extra, expected }) => {
    const { admin, spend, subject } = watched.server;
    const app = await appWithLimit(admin, subject.userId, "100");
    await authorized(spend, { userId: subject.userId, appId: app, amount: money("1") });
    sent.length = 0;
    const answer = await spend.authorize({ userId: subject.userId, appId: app, amount: money("1"), ...extra });
    expect(answer.response.status).toBe(200);
    const decision = transaction();
    expect(decision.length, decision.join("\n")).toBe(expected);
    // The Idempotency-Key takes no round trip of its own: its record is inserted by the decision's last call.
    const keyed = sent.filter((s) => /idempotency_records/.test(s.text)).map((s) => s.text);
    expect(keyed).toHaveLength(1);
    expect(decision).toContain(keyed[0]);
  });

  // Before the change: the authorization's read (who may see it). The change's
  // transaction: BEGIN with the window's lock and the row read after it (one simple query), the
  // row's update with its ledger entries, the spent counter and the idempotent answer (one call), COMMIT.
  it.each([
    { what: "whole", body: {} },
    // A second ledger entry (the rest released), in the same call.
    { what: "partial", body: { amount: money("0", 400_000_000) } },
  ])("a $what capture: the change in 3 round trips, one transaction", async ({ body }) => {
    const { admin, spend, subject } = watched.server;
    const app = await appWithLimit(admin, subject.userId, "100");
    const hold = await authorized(spend, { userId: subject.userId, appId: app, amount: money("1") });
    sent.length = 0;
    const answer = await spend.capture(hold.id, body, randomUUID());
    expect(answer.response.status).toBe(200);
    const change = transaction();
    expect(change.length, change.join("\n")).toBe(3);
  });
});
