// PostgreSQL round trips of one Authorize, Capture, Release or Reverse, counted at the pg client as
// the server (in this process) sends them (other connections poll for changes meanwhile). Nothing
// before the decision (the caller's principal and the fund policy are kept; the Idempotency-Key takes
// no claim). A decision: the whole decision as one call, a transaction by itself (spend_authorize:
// the policy's shared lock and the check that it is the kept one, the check that the layers are
// those decided on, the window's lock with the sweep of its expired holds and the check that the
// usage is the one decided on, the idempotent answer, the authorization with its ledger entry and
// the spent counter of a direct spend), decided on what the instance's last decision of the subject
// and app saw; the first of a subject and app reads the layers and the usage (one statement) first.
// No BEGIN, no COMMIT.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { testDialect } from "../../support/database.js";
import { unwrap } from "../../../src/client/index.js";
import { appWithLimit, authorized, money, watchingQueries, type WatchedServer } from "./helpers.js";

const watched = watchingQueries();
const { sent } = watched;

describe.skipIf(testDialect() !== "postgres")("Authorize's, Capture's, Release's and Reverse's round trips (PostgreSQL)", () => {

  it.each([
    { what: "a hold", extra: {} },
    // The window's spent counter too, in the same call.
    { what: "a direct spend", extra: { capture: true } },
    // The declined authorization is kept, without a ledger entry.
    { what: "a decline", extra: { amount: money("1000") } },
  ])("$what: the first of a subject and app, the read then the call; the next, the call alone", async ({ extra }) => {
    const { admin, spend, subject } = watched.server;
    const app = await appWithLimit(admin, subject.userId, "100");
    const decide = () => spend.authorize({ userId: subject.userId, appId: app, amount: money("1"), ...extra });
    for (const reads of [1, 0]) {
      const trips = await watched.roundTrips(/spend_authorize\(/, decide);
      expect(trips.filter((t) => /^(begin|commit)/i.test(t))).toEqual([]);
      expect(trips.filter((t) => /spend_authorize\(/.test(t)), trips.join("\n")).toHaveLength(1);
      expect(trips.filter((t) => /"spend_usage"/.test(t)), trips.join("\n")).toHaveLength(reads);
      // The Idempotency-Key takes no round trip of its own: its record is inserted by the decision's call.
      const keyed = sent.filter((s) => /idempotency_records/.test(s.text));
      expect(keyed).toHaveLength(0);
    }
  });

  // The call never waits for a lock (a statement that waited would commit once it got it, even with
  // its connection lost meanwhile): held, it writes nothing and the decision runs in a transaction,
  // which waits for it and decides on the usage read after it.
  // A lock held: the call in autocommit writes nothing (it would commit after its wait even with its
  // connection lost), and the same call runs again in a transaction, with BEGIN, and waits.
  const whileLocked = async (userId: string, appId: string, call: RegExp, act: Parameters<WatchedServer["roundTrips"]>[1]) => {
    const locker = new pg.Client({ connectionString: watched.server.ts.databaseUrl });
    await locker.connect();
    try {
      await locker.query("begin");
      await locker.query("select spend_lock_subject_app($1, $2)", [userId, appId]);
      const trips = await watched.roundTrips(call, async () => {
        const pending = act();
        const waiting = "select 1 from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())";
        while ((await locker.query(waiting)).rowCount === 0) await new Promise((resolve) => setTimeout(resolve, 20));
        await locker.query("rollback");
        return pending;
      });
      const calls = trips.filter((t) => call.test(t));
      expect(calls, trips.join("\n")).toHaveLength(2);
      expect(calls[0], trips.join("\n")).not.toMatch(/^begin/i);
      expect(calls[1], trips.join("\n")).toMatch(/^begin;/i);
      expect(trips.filter((t) => /^commit/i.test(t)), trips.join("\n")).toHaveLength(1);
      expect(trips.filter((t) => /spend_lock_window\(|spend_lock_row\(/.test(t)), trips.join("\n")).toEqual([]);
    } finally {
      await locker.end();
    }
  };

  it("Authorize with the subject and app's lock held: the call writes nothing, then the same call in a transaction waits and decides", async () => {
    const { admin, spend, subject } = watched.server;
    const app = await appWithLimit(admin, subject.userId, "100");
    await authorized(spend, { userId: subject.userId, appId: app, amount: money("1") });
    let answer: Awaited<ReturnType<typeof spend.authorize>> | undefined;
    await whileLocked(subject.userId, app, /spend_authorize\(/, async () => (answer = await spend.authorize({ userId: subject.userId, appId: app, amount: money("1") })));
    expect(answer && unwrap(answer).authorization.decision.usage.held).toEqual(money("2"));
  });

  it("Capture with the subject and app's lock held: the same", async () => {
    const { admin, spend, subject } = watched.server;
    const app = await appWithLimit(admin, subject.userId, "100");
    const hold = await authorized(spend, { userId: subject.userId, appId: app, amount: money("1") });
    let answer: Awaited<ReturnType<typeof spend.capture>> | undefined;
    await whileLocked(subject.userId, app, /spend_change\(/, async () => (answer = await spend.capture(hold.id, {}, randomUUID())));
    expect(answer && unwrap(answer).authorization).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", capturedAmount: money("1") });
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
