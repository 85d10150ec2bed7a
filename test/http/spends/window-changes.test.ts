// A window's usage is every spend whose authorization instant lies inside it, whatever period or
// time zone was in force when it was made: changing a limit's period or the fund policy's time zone
// never resets or hides money already spent or held. Period changes both ways, time-zone changes
// east, west and back (each window counting the spends whose instants fall in it, no more), holds
// and reversals across a change, and 150 concurrent decisions while the period and the zone flip.
import { afterEach, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { amount, type Funds } from "../limits/helpers.js";
import { appWithLimit, authorized, money, spendServerForFile, type Spends } from "./helpers.js";
import { expectSerialApprovals, expectUsageMatchesStates, NANOS, spends as loadSpends, usd } from "./load-helpers.js";
import { withDatabase } from "../../support/old-database.js";
import type { TestServer } from "../../support/server.js";

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let subject: { userId: string };

spendServerForFile((server) => void ({ ts, admin, spend, subject } = server));

const START = Date.parse("2026-11-20T09:00:00Z");
afterEach(async () => {
  ts.clock.set(START);
  await setTimeZone("UTC");
});

const at = (instant: string) => ts.clock.set(Date.parse(instant));
const auth = (appId: string, units: string, extra: object = {}) => authorized(spend, { userId: subject.userId, appId, amount: money(units), ...extra });
const usage = async (appId: string) => unwrap(await admin.effective(subject.userId, appId)).effective.usage;
const approved = async (appId: string, units: string) => (await auth(appId, units)).decision.approved;
const period = (appId: string, units: string, p: string) => admin.setLimit(subject.userId, appId, { limit: amount(units), period: p }).then(unwrap);
async function setTimeZone(timeZone: string): Promise<void> {
  unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", timeZone, defaultControls: null }, updateMask: "timeZone" }));
}

describe(`a limit's period changed (${testDialect()})`, () => {
  it("monthly made weekly counts this week's spends; made monthly again, the month counts the week's too", async () => {
    at("2026-11-18T12:00:00Z");
    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_MONTHLY");
    await auth(app, "50", { capture: true });
    at("2026-11-24T12:00:00Z");
    await auth(app, "30", { capture: true });
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-01T00:00:00.000Z", spent: money("80"), remaining: money("20") });

    // The week of 23 November holds only the 30 of the 24th.
    await period(app, "100", "PERIOD_KIND_WEEKLY");
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-23T00:00:00.000Z", windowEnd: "2026-11-30T00:00:00.000Z", spent: money("30"), held: money("0"), remaining: money("70") });
    expect(await approved(app, "71")).toBe(false);
    const hold = await auth(app, "70");
    expect(hold.decision).toMatchObject({ approved: true, usage: { spent: money("30"), held: money("70"), remaining: money("0") } });

    // The month counts all of it, the week's hold included: nothing more fits.
    await period(app, "100", "PERIOD_KIND_MONTHLY");
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-01T00:00:00.000Z", spent: money("80"), held: money("70"), remaining: money("0") });
    expect(await approved(app, "1")).toBe(false);
    unwrap(await spend.release(hold.id));
    expect(await usage(app)).toMatchObject({ spent: money("80"), held: money("0"), remaining: money("20") });
    expect(await approved(app, "20")).toBe(true);
    expect(await approved(app, "1")).toBe(false);
  });

  it("a reversal after a change gives back to every window holding the spend's instant, and to no other", async () => {
    at("2026-11-18T12:00:00Z");
    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_MONTHLY");
    const older = await auth(app, "40", { capture: true });
    at("2026-11-24T12:00:00Z");
    const newer = await auth(app, "20", { capture: true });
    await period(app, "100", "PERIOD_KIND_WEEKLY");
    expect(await usage(app)).toMatchObject({ spent: money("20") });

    // The 18th is not in this week: its reversal leaves the week as it is, and gives back to the month.
    unwrap(await spend.reverse(older.id, { amount: money("15") }));
    expect(await usage(app)).toMatchObject({ spent: money("20"), remaining: money("80") });
    unwrap(await spend.reverse(newer.id, { amount: money("5") }));
    expect(await usage(app)).toMatchObject({ spent: money("15"), remaining: money("85") });
    await period(app, "100", "PERIOD_KIND_MONTHLY");
    expect(await usage(app)).toMatchObject({ spent: money("40"), remaining: money("60") });
  });

  it("a hold made before a change is held by the new window; its capture, release and expiry move it there", async () => {
    at("2026-11-24T12:00:00Z");
    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_MONTHLY");
    const captured = await auth(app, "40", { holdSeconds: 3600 });
    const released = await auth(app, "10", { holdSeconds: 3600 });
    const expiring = await auth(app, "5", { holdSeconds: 600 });

    await period(app, "100", "PERIOD_KIND_DAILY");
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-24T00:00:00.000Z", spent: money("0"), held: money("55"), remaining: money("45") });
    unwrap(await spend.capture(captured.id, { amount: money("25") }));
    unwrap(await spend.release(released.id));
    expect(await usage(app)).toMatchObject({ spent: money("25"), held: money("5"), remaining: money("70") });
    at("2026-11-24T12:10:00Z");
    expect(await usage(app)).toMatchObject({ spent: money("25"), held: money("0"), remaining: money("75") });
    expect((await auth(app, "75")).decision.usage).toMatchObject({ spent: money("25"), held: money("75"), remaining: money("0") });
    expect(unwrap(await spend.get(expiring.id)).authorization.state).toBe("SPEND_AUTHORIZATION_STATE_EXPIRED");

    await period(app, "100", "PERIOD_KIND_MONTHLY");
    expect(await usage(app)).toMatchObject({ spent: money("25"), held: money("75"), remaining: money("0") });
  });
});

describe(`the fund policy's time zone changed (${testDialect()})`, () => {
  it("east, west and back: a month's spend is spent in every zone's month, never again", async () => {
    at("2026-11-15T12:00:00Z");
    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_MONTHLY");
    await auth(app, "100", { capture: true });
    for (const [zone, windowStart] of [
      ["Pacific/Kiritimati", "2026-10-31T10:00:00.000Z"],
      ["Etc/GMT+12", "2026-11-01T12:00:00.000Z"],
      ["UTC", "2026-11-01T00:00:00.000Z"],
    ] as const) {
      await setTimeZone(zone);
      expect(await usage(app), zone).toMatchObject({ windowStart, spent: money("100"), remaining: money("0") });
      expect(await approved(app, "1"), zone).toBe(false);
    }
  });

  it("a new zone's window counts the spends whose instants fall in it, and only those", async () => {
    // 05:00 and 20:00 UTC on 30 November: both in UTC's November.
    at("2026-11-30T05:00:00Z");
    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_MONTHLY");
    await auth(app, "30", { capture: true });
    at("2026-11-30T20:00:00Z");
    await auth(app, "20", { capture: true });
    expect(await usage(app)).toMatchObject({ spent: money("50") });

    // Kiritimati (UTC+14): already 1 December there, from 10:00 UTC: the 20 only.
    await setTimeZone("Pacific/Kiritimati");
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-30T10:00:00.000Z", windowEnd: "2026-12-31T10:00:00.000Z", spent: money("20"), remaining: money("80") });
    expect((await auth(app, "80", { capture: true })).decision.approved).toBe(true);
    expect(await approved(app, "1")).toBe(false);

    // UTC-12: still November there, until 1 December 12:00 UTC: the 30, the 20 and the 80.
    await setTimeZone("Etc/GMT+12");
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-01T12:00:00.000Z", windowEnd: "2026-12-01T12:00:00.000Z", spent: money("130"), remaining: money("0") });
    expect(await approved(app, "1")).toBe(false);

    // Back in UTC: November holds all three.
    await setTimeZone("UTC");
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-01T00:00:00.000Z", spent: money("130"), remaining: money("0") });
  });
});

describe(`GetEffective of a window without its row yet (${testDialect()})`, () => {
  const usageRows = () => withDatabase(ts.databaseUrl, async (db) => Number((await db.selectFrom("spend_usage").select(db.fn.countAll().as("n")).executeTakeFirstOrThrow()).n));

  it("stores nothing for a window without spends, and creates the row of one with spends once", async () => {
    at("2026-11-18T12:00:00Z");
    const before = await usageRows();
    for (let i = 0; i < 3; i++) {
      const empty = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_MONTHLY");
      expect(await usage(empty)).toMatchObject({ spent: money("0"), held: money("0"), remaining: money("100") });
    }
    expect(await usageRows()).toBe(before);

    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_MONTHLY");
    await auth(app, "10", { capture: true });
    const withSpends = await usageRows();
    await period(app, "100", "PERIOD_KIND_WEEKLY");
    expect(await usage(app)).toMatchObject({ spent: money("10") });
    expect(await usage(app)).toMatchObject({ spent: money("10") });
    expect(await usageRows()).toBe(withSpends + 1);
  });
});

describe(`150 concurrent authorizations of 1.00 against 100.00 while the period and the time zone flip (${testDialect()})`, () => {
  it("exactly 100 approved, each seeing a distinct usage; every period's and zone's window then holds all 100", async () => {
    // Wednesday 18 November: its week and month contain the instant in UTC and in Tokyo alike.
    at("2026-11-18T12:00:00Z");
    const s = loadSpends(ts.admin);
    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_MONTHLY");
    const periods = ["PERIOD_KIND_WEEKLY", "PERIOD_KIND_MONTHLY"];
    const zones = ["Asia/Tokyo", "UTC"];
    const answers = await Promise.all([
      ...Array.from({ length: 150 }, () => s.authorize({ userId: subject.userId, appId: app, amount: usd(NANOS) }).then(unwrap)),
      ...Array.from({ length: 10 }, (_, i) => period(app, "100", periods[i % 2]!).then(() => undefined)),
      ...Array.from({ length: 10 }, (_, i) => setTimeZone(zones[i % 2]!)),
    ]);
    const decided = answers.flatMap((a) => (a ? [a.authorization] : []));
    const approvals = decided.filter((a) => a.decision.approved);
    expect(approvals).toHaveLength(100);
    expectSerialApprovals(approvals, NANOS, 100);
    for (const a of decided.filter((d) => !d.decision.approved)) expect(a.decision.cause).toBe("SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED");

    for (const zone of zones) {
      await setTimeZone(zone);
      for (const p of periods) {
        await period(app, "100", p);
        expect(await usage(app), `${zone} ${p}`).toMatchObject({ spent: money("0"), held: money("100"), remaining: money("0") });
        await expectUsageMatchesStates(s, subject.userId, app, 100n * NANOS);
      }
    }
  }, 120_000);
});
