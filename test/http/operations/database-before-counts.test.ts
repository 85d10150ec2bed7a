// A database written before windows counted authorizations (migrations up to 0033): a window's usage
// row written then is counted from its authorizations when the server migrates it (its unexpired
// holds at its held_through and its captures, reversed or not; not a release, an expiry or a
// decline), and the count then moves with new holds and expiries as in a new database.
import { describe, expect, it } from "vitest";
import { createApiClient, unwrap } from "../../../src/client/index.js";
import { ManualClock } from "../../../src/core/clock.js";
import { testDialect } from "../../support/database.js";
import { OLD_ADMIN, oldAuthorization, serverOnOldDatabase, writeOldAdmin, writeOldSpender } from "../../support/old-database.js";
import { amount, funds, money } from "../limits/helpers.js";
import { spends } from "../spends/helpers.js";

const SUBJECT = "0ldSubject000002";
const APP = "old-count-app";
const WINDOW = { window_start: "2026-11-01T00:00:00.000Z", window_end: "2026-12-01T00:00:00.000Z" };
const MADE = "2026-11-20T07:00:00.000Z";
const SWEPT = "2026-11-20T09:00:00.000Z";
const UNIT = 1_000_000_000n;

const clock = new ManualClock(Date.parse(SWEPT));

const authorization = (name: string, units: bigint, state: string, expiresAt: string | null, reversedUnits = 0n) =>
  oldAuthorization({ name, userId: SUBJECT, appId: APP, window: WINDOW, units, state, expiresAt, reversedUnits, decision: { approved: state !== "DECLINED" }, at: MADE });

const old = serverOnOldDatabase("0033_webhook_sender_kinds", clock, async (db) => {
  await writeOldAdmin(db, "2026-11-01T08:00:00.000Z");
  await writeOldSpender(db, SUBJECT, "2026-11-01T08:00:00.000Z");
  await db
    .insertInto("spend_authorizations")
    .values([
      authorization("HoldLiv1", 3n, "PENDING", "2026-11-20T09:10:00.000Z"),
      authorization("HoldExp1", 2n, "PENDING", "2026-11-20T08:00:00.000Z"),
      authorization("HoldRel1", 5n, "RELEASED", "2026-11-20T09:30:00.000Z"),
      authorization("SpendCap", 4n, "CAPTURED", null),
      authorization("SpendRev", 6n, "CAPTURED", null, 6n),
      authorization("Declined", 1n, "DECLINED", null),
      authorization("HoldLiv2", 1n, "PENDING", "2026-11-20T09:20:00.000Z"),
    ])
    .execute();
  // The window's row as that release left it, swept at 09:00 (PostgreSQL's seed trigger sums it alike).
  await db.insertInto("spend_usage").values({ user_id: SUBJECT, app_id: APP, ...WINDOW, spent_nanos: 4n * UNIT, held_nanos: 4n * UNIT, held_through: SWEPT }).execute();
});

describe(`a database from before windows counted authorizations (${testDialect()})`, () => {
  it("counts a window's unexpired holds and captures once migrated, then moves the count with new holds and expiries", async () => {
    const api = createApiClient({ baseUrl: old.server().url, credentials: { clientId: OLD_ADMIN.clientId, clientSecret: OLD_ADMIN.clientSecret } });
    const admin = funds(api);
    const spend = spends(api);
    const usage = async () => unwrap(await admin.effective(SUBJECT, APP)).effective.usage;
    const authorize = async () => unwrap(await spend.authorize({ userId: SUBJECT, appId: APP, amount: money("1"), holdSeconds: 3600 })).authorization;

    // Two live holds, a capture and a reversed capture; not the expired hold, the release or the decline.
    expect(await usage()).toMatchObject({ spent: money("4"), held: money("4"), authorizations: "4" });
    unwrap(await admin.setLimit(SUBJECT, APP, { limit: amount("100"), maxAuthorizations: 5 }));
    expect((await authorize()).decision.usage).toMatchObject({ authorizations: "5", authorizationsRemaining: 0 });
    expect((await authorize()).decision.cause).toBe("SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED");
    // The first old hold expires: its place is free at once.
    clock.set(Date.parse("2026-11-20T09:15:00Z"));
    expect(await usage()).toMatchObject({ held: money("2"), authorizations: "4" });
    expect((await authorize()).decision.usage).toMatchObject({ authorizations: "5" });
  });
});
