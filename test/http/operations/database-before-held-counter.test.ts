// A database written before the held counter (migrations up to 0015): its windows' open holds are
// counted once the server has migrated it, its expired, released and captured ones are not, and the
// counter then moves with new holds, expiries and releases as in a new database; a hold written by
// an instance of the earlier release (its own statements, no counter) is counted by the triggers.
import { describe, expect, it } from "vitest";
import { createApiClient, unwrap } from "../../../src/client/index.js";
import { ManualClock } from "../../../src/core/clock.js";
import { testDialect } from "../../support/database.js";
import { OLD_ADMIN, oldAuthorization, oldAuthorizationId, serverOnOldDatabase, withDatabase, writeOldAdmin, writeOldSpender } from "../../support/old-database.js";
import { amount, funds, money } from "../limits/helpers.js";
import { spends } from "../spends/helpers.js";

const SUBJECT = "0ldSubject000001";
const APP = "old-app";
const WINDOW = { window_start: "2026-11-01T00:00:00.000Z", window_end: "2026-12-01T00:00:00.000Z" };
const NOW = Date.parse("2026-11-20T09:00:00Z");
const UNIT = 1_000_000_000n;

const clock = new ManualClock(NOW);

const usd = (units: bigint) => ({ currencyCode: "USD", units: String(units), nanos: 0 });

/** A decision as the release before 0016 kept it (an unlimited app, so its usage names no limit). */
const decision = (units: bigint, state: string) => ({
  approved: true,
  cause: "SPEND_DECLINE_CAUSE_UNSPECIFIED",
  scope: "SCOPE_SUBJECT_APP",
  period: "PERIOD_KIND_MONTHLY",
  trace: [],
  usage: { windowStart: WINDOW.window_start, windowEnd: WINDOW.window_end, spent: usd(state === "CAPTURED" ? units : 0n), held: usd(state === "CAPTURED" ? 0n : units), limit: null, remaining: null },
});

/** An authorization of `units` USD as the release before 0016 wrote it. */
const MADE = "2026-11-20T07:00:00.000Z";
const authorization = (name: string, units: bigint, state: string, expiresAt: string | null) =>
  oldAuthorization({ name, userId: SUBJECT, appId: APP, window: WINDOW, units, state, expiresAt, decision: decision(units, state), at: MADE });

const old = serverOnOldDatabase("0015_listeners_version", clock, async (db) => {
  const at = "2026-11-01T08:00:00.000Z";
  await writeOldAdmin(db, at);
  await writeOldSpender(db, SUBJECT, at);
  await db
    .insertInto("spend_authorizations")
    .values([
      authorization("HoldLiv1", 3n, "PENDING", "2026-11-20T09:10:00.000Z"),
      authorization("HoldExp1", 2n, "PENDING", "2026-11-20T08:00:00.000Z"),
      authorization("HoldRel1", 5n, "RELEASED", "2026-11-20T09:30:00.000Z"),
      authorization("SpendCap", 4n, "CAPTURED", null),
      authorization("HoldLiv2", 1n, "PENDING", "2026-11-20T09:20:00.000Z"),
    ])
    .execute();
  await db.insertInto("spend_usage").values({ user_id: SUBJECT, app_id: APP, ...WINDOW, spent_nanos: 4n * UNIT }).execute();
});

describe(`a database from before the held counter (${testDialect()})`, () => {
  it("counts the open holds it held, and the counter moves on from there", async () => {
    const api = createApiClient({ baseUrl: old.server().url, credentials: { clientId: OLD_ADMIN.clientId, clientSecret: OLD_ADMIN.clientSecret } });
    const admin = funds(api);
    const spend = spends(api);
    const usage = async () => unwrap(await admin.effective(SUBJECT, APP)).effective.usage;
    const authorize = async (units: string) => unwrap(await spend.authorize({ userId: SUBJECT, appId: APP, amount: money(units), holdSeconds: 3600 })).authorization;

    // The two unexpired holds (3 + 1); the expired, released and captured ones do not hold.
    expect(await usage()).toMatchObject({ spent: money("4"), held: money("4") });
    unwrap(await admin.setLimit(SUBJECT, APP, { limit: amount("20") }));
    expect((await authorize("10")).decision.usage).toMatchObject({ spent: money("4"), held: money("14"), remaining: money("2") });
    expect((await authorize("3")).decision.approved).toBe(false);

    // The first old hold expires: its 3.00 is free at once.
    clock.set(Date.parse("2026-11-20T09:15:00Z"));
    expect(await usage()).toMatchObject({ held: money("11") });
    expect((await authorize("3")).decision.usage).toMatchObject({ held: money("14"), remaining: money("2") });
    unwrap(await spend.release(oldAuthorizationId("HoldLiv2", MADE)));
    expect(await usage()).toMatchObject({ spent: money("4"), held: money("13"), remaining: money("3") });
  });

  it("counts a hold that an instance of the earlier release writes, which knows nothing of the counter", async () => {
    const api = createApiClient({ baseUrl: old.server().url, credentials: { clientId: OLD_ADMIN.clientId, clientSecret: OLD_ADMIN.clientSecret } });
    const usage = async () => unwrap(await funds(api).effective(SUBJECT, APP)).effective.usage;
    const before = await usage();
    // Its statements: the authorization alone, then its state.
    await withDatabase(old.url(), (db) => db.insertInto("spend_authorizations").values(authorization("OldWrote", 2n, "PENDING", "2026-11-20T10:00:00.000Z")).execute());
    expect(await usage()).toMatchObject({ held: money(String(BigInt(before.held.units) + 2n)) });
    await withDatabase(old.url(), (db) => db.updateTable("spend_authorizations").set({ state: "RELEASED" }).where("id", "=", oldAuthorizationId("OldWrote", MADE)).execute());
    expect(await usage()).toMatchObject({ held: before.held });
  });
});
