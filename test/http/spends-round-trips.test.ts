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

describe.skipIf(testDialect() !== "postgres")("Authorize's, Capture's, Release's and Reverse's round trips (PostgreSQL)", () => {

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

  // The authorization's read (who may see it), then the whole change as one call, a transaction by
  // itself: the window's lock, the check that the row is as read, the kept answer, the row's update
  // with its ledger entries and the spent counter (spend_change). No BEGIN, no COMMIT.
  it.each([
    { what: "a whole capture", change: (id: string) => watched.server.spend.capture(id, {}, randomUUID()) },
    // A second ledger entry (the rest released), in the same call.
    { what: "a partial capture", change: (id: string) => watched.server.spend.capture(id, { amount: money("0", 400_000_000) }, randomUUID()) },
    { what: "a release", change: (id: string) => watched.server.spend.release(id, {}, randomUUID()) },
    { what: "a reversal", change: async (id: string) => {
      await watched.server.spend.capture(id, {}, randomUUID());
      return watched.server.spend.reverse(id, {}, randomUUID());
    } },
  ])("$what: the read, then the change in one round trip", async ({ what, change }) => {
    const { admin, spend, subject } = watched.server;
    const app = await appWithLimit(admin, subject.userId, "100");
    const hold = await authorized(spend, { userId: subject.userId, appId: app, amount: money("1") });
    sent.length = 0;
    const answer = await change(hold.id);
    expect(answer.response.status).toBe(200);
    const texts = sent.map((s) => s.text);
    expect(texts.filter((t) => /^(begin|commit)/i.test(t))).toEqual([]);
    const calls = texts.filter((t) => /spend_change\(/.test(t));
    const reads = texts.filter((t) => /from "spend_authorizations"/.test(t));
    // A reversal is preceded by its capture: two of each.
    const changes = what === "a reversal" ? 2 : 1;
    expect(calls, texts.join("\n")).toHaveLength(changes);
    expect(reads, texts.join("\n")).toHaveLength(changes);
  });
});
