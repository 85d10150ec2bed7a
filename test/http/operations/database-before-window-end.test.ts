// A database written before usage counted spends by their instant (migrations up to 0017, when
// usage rows were keyed by a window's start alone, and two periods' windows that start at the same
// instant shared one). Once the server has migrated it, every window counts every spend made inside
// it, whichever window the spend was decided in: what was captured less what was reversed, and the
// holds still open.
import { describe, expect, it } from "vitest";
import { createApiClient, unwrap } from "../../../src/client/index.js";
import { ManualClock } from "../../../src/core/clock.js";
import { testDialect } from "../../support/database.js";
import { OLD_ADMIN, oldAuthorization, serverOnOldDatabase, writeOldAdmin, writeOldSpender } from "../../support/old-database.js";
import { amount, funds, money } from "../limits/helpers.js";
import { spends } from "../spends/helpers.js";

const SUBJECT = "0ldSubject000002";
const APP = "old-app-windows";
// Monday 23 November 2026: the day's window and the week's start at the same midnight.
const DAY = { window_start: "2026-11-23T00:00:00.000Z", window_end: "2026-11-24T00:00:00.000Z" };
const WEEK = { window_start: "2026-11-23T00:00:00.000Z", window_end: "2026-11-30T00:00:00.000Z" };
const NOW = Date.parse("2026-11-23T09:00:00Z");
const UNIT = 1_000_000_000n;
const clock = new ManualClock(NOW);

/** An authorization of `units` USD in `window`, as the release before 0018 wrote it. */
const authorization = (name: string, window: typeof DAY, units: bigint, state: string, expiresAt: string | null, reversedUnits = 0n) =>
  oldAuthorization({ name, userId: SUBJECT, appId: APP, window, units, state, expiresAt, reversedUnits, decision: { approved: true, usage: null }, at: "2026-11-23T07:00:00.000Z" });

const old = serverOnOldDatabase("0017_spends_currency_index_dropped", clock, async (db) => {
  const at = "2026-11-01T08:00:00.000Z";
  await writeOldAdmin(db, at);
  await writeOldSpender(db, SUBJECT, at);
  await db
    .insertInto("spend_authorizations")
    .values([
      authorization("DaySpend", DAY, 6n, "CAPTURED", null, 1n),
      authorization("DayHold1", DAY, 2n, "PENDING", "2026-11-23T10:00:00.000Z"),
      authorization("WeekHold", WEEK, 3n, "PENDING", "2026-11-23T12:00:00.000Z"),
      authorization("WkSpend1", WEEK, 4n, "CAPTURED", null),
      // Expired before the migration.
      authorization("WkExpird", WEEK, 1n, "PENDING", "2026-11-23T08:00:00.000Z"),
    ])
    .execute();
  // One row for both windows, as that release kept them: its window_end the last writer's.
  await db
    .insertInto("spend_usage")
    .values({ user_id: SUBJECT, app_id: APP, ...WEEK, spent_nanos: 9n * UNIT, held_nanos: 5n * UNIT, held_through: "2026-11-23T08:30:00.000Z" })
    .execute();
});

describe(`a database from before usage counted spends by their instant (${testDialect()})`, () => {
  it("counts in each window every spend made inside it, whichever window it was decided in, and decides on it", async () => {
    const api = createApiClient({ baseUrl: old.server().url, credentials: { clientId: OLD_ADMIN.clientId, clientSecret: OLD_ADMIN.clientSecret } });
    const admin = funds(api);
    const spend = spends(api);
    const usage = async () => unwrap(await admin.effective(SUBJECT, APP)).effective.usage;
    const authorize = async (units: string, nanos = 0) => unwrap(await spend.authorize({ userId: SUBJECT, appId: APP, amount: money(units, nanos), holdSeconds: 3600 })).authorization;
    const aCent = () => authorize("0", 10_000_000);

    // Every spend was made this morning: the day counts the day's and the week's alike.
    unwrap(await admin.setLimit(SUBJECT, APP, { limit: amount("20"), period: "PERIOD_KIND_DAILY" }));
    // 6 captured less 1 reversed, and 4 captured; the open holds 2 and 3, not the expired one.
    expect(await usage()).toMatchObject({ windowEnd: DAY.window_end, spent: money("9"), held: money("5"), remaining: money("6") });
    expect((await authorize("6")).decision.approved).toBe(true);
    expect((await aCent()).decision.approved).toBe(false);

    // The week counts the same spends, and the hold the day's limit just approved.
    unwrap(await admin.setLimit(SUBJECT, APP, { limit: amount("30"), period: "PERIOD_KIND_WEEKLY" }));
    expect(await usage()).toMatchObject({ windowEnd: WEEK.window_end, spent: money("9"), held: money("11"), remaining: money("10") });
    expect((await authorize("10")).decision.approved).toBe(true);
    expect((await aCent()).decision.approved).toBe(false);
  });
});
