// A database written before usage rows were keyed by a window's start and end (migrations up to
// 0017): where windows of two periods started at the same instant, one row counted both. After the
// server has migrated it, each window has its own usage, rebuilt from its authorizations: what they
// captured less what was reversed, and the holds open at the row's `held_through`.
import { describe, expect, it } from "vitest";
import { createApiClient, unwrap } from "../../src/client/index.js";
import { ManualClock } from "../../src/core/clock.js";
import { testDialect } from "../support/database.js";
import { OLD_ADMIN, oldAuthorization, serverOnOldDatabase, writeOldAdmin, writeOldSpender } from "../support/old-database.js";
import { amount, funds, money } from "./funds-helpers.js";
import { spends } from "./spends-helpers.js";

const SUBJECT = "0ldSubject000002";
const APP = "old-app-windows";
// Monday 23 November 2026: the day's window and the week's start at the same midnight.
const DAY = { window_start: "2026-11-23T00:00:00.000Z", window_end: "2026-11-24T00:00:00.000Z" };
const WEEK = { window_start: "2026-11-23T00:00:00.000Z", window_end: "2026-11-30T00:00:00.000Z" };
const NOW = Date.parse("2026-11-23T09:00:00Z");
const UNIT = 1_000_000_000n;
const clock = new ManualClock(NOW);

/** An authorization of `units` USD in `window`, as the release before 0018 wrote it. */
const authorization = (id: string, window: typeof DAY, units: bigint, state: string, expiresAt: string | null, reversedUnits = 0n) =>
  oldAuthorization({ id, userId: SUBJECT, appId: APP, window, units, state, expiresAt, reversedUnits, decision: { approved: true, usage: null }, at: "2026-11-23T07:00:00.000Z" });

const old = serverOnOldDatabase("0017_spends_currency_index_dropped", clock, async (db) => {
  const at = "2026-11-01T08:00:00.000Z";
  await writeOldAdmin(db, at);
  await writeOldSpender(db, SUBJECT, at);
  await db
    .insertInto("spend_authorizations")
    .values([
      authorization("0ldDaySpend00001", DAY, 6n, "CAPTURED", null, 1n),
      authorization("0ldDayHold000001", DAY, 2n, "PENDING", "2026-11-23T10:00:00.000Z"),
      authorization("0ldWeekHold00001", WEEK, 3n, "PENDING", "2026-11-23T12:00:00.000Z"),
      authorization("0ldWeekSpend0001", WEEK, 4n, "CAPTURED", null),
      // Expired before the row's held_through: swept out of its counter already.
      authorization("0ldWeekExpired01", WEEK, 1n, "PENDING", "2026-11-23T08:00:00.000Z"),
    ])
    .execute();
  // One row for both windows, as that release kept them: its window_end the last writer's.
  await db
    .insertInto("spend_usage")
    .values({ user_id: SUBJECT, app_id: APP, ...WEEK, spent_nanos: 9n * UNIT, held_nanos: 5n * UNIT, held_through: "2026-11-23T08:30:00.000Z" })
    .execute();
});

describe(`a database from before windows were keyed by start and end (${testDialect()})`, () => {
  it("gives each window of a shared start its own usage, and decides on it", async () => {
    const api = createApiClient({ baseUrl: old.server().url, credentials: { clientId: OLD_ADMIN.clientId, clientSecret: OLD_ADMIN.clientSecret } });
    const admin = funds(api);
    const spend = spends(api);
    const usage = async () => unwrap(await admin.effective(SUBJECT, APP)).effective.usage;
    const authorize = async (units: string, nanos = 0) => unwrap(await spend.authorize({ userId: SUBJECT, appId: APP, amount: money(units, nanos), holdSeconds: 3600 })).authorization;
    const aCent = () => authorize("0", 10_000_000);

    unwrap(await admin.setLimit(SUBJECT, APP, { limit: amount("10"), period: "PERIOD_KIND_DAILY" }));
    // The day: 6 captured less 1 reversed, the open 2.00 hold.
    expect(await usage()).toMatchObject({ windowEnd: DAY.window_end, spent: money("5"), held: money("2"), remaining: money("3") });
    expect((await authorize("3")).decision.approved).toBe(true);
    expect((await aCent()).decision.approved).toBe(false);

    unwrap(await admin.setLimit(SUBJECT, APP, { limit: amount("20"), period: "PERIOD_KIND_WEEKLY" }));
    // The week: its 4.00 spend, its open 3.00 hold; not the expired one, nothing of the day's.
    expect(await usage()).toMatchObject({ windowEnd: WEEK.window_end, spent: money("4"), held: money("3"), remaining: money("13") });
    expect((await authorize("13")).decision.approved).toBe(true);
    expect((await aCent()).decision.approved).toBe(false);
  });
});
