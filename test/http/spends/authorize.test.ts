// SpendService.Authorize and Get through HTTP: approve and decline per cause, the window of each
// period, usage after each decision, unlimited accounted, a limit changed mid-window, int64 edges,
// the request's own errors, and exactness under concurrent authorizations.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { BLOCKED, DAY, expectError, UNLIMITED, type Funds, iso } from "../limits/helpers.js";
import { amount, appWithLimit, authorized, money, newAppId, spendServerForFile, type Spends } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let subject: { userId: string; f: Funds; s: Spends };

spendServerForFile((server) => void ({ ts, admin, spend, subject } = server));

/** int64 max nanos as Money: 9223372036 units and 854775807 nanos. */
const MAX_MONEY = money("9223372036", 854_775_807);

const NOV = { windowStart: "2026-11-01T00:00:00.000Z", windowEnd: "2026-12-01T00:00:00.000Z" };
const auth = (appId: string, units: string, extra: object = {}) => authorized(spend, { userId: subject.userId, appId, amount: money(units), ...extra });
const effectiveUsage = async (appId: string) => unwrap(await admin.effective(subject.userId, appId)).effective.usage;

describe("Authorize against an amount limit", () => {
  it("approves within the limit, holds the amount and answers the window's usage after it; Get answers the same", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const a = await auth(app, "15", { metadata: { orderId: "ord_1" } });
    expect(a).toMatchObject({
      userId: subject.userId,
      appId: app,
      amount: money("15"),
      state: "SPEND_AUTHORIZATION_STATE_PENDING",
      capturedAmount: money("0"),
      reversedAmount: money("0"),
      expiresAt: iso(ts.clock.now() + 600_000),
      ...NOV,
      metadata: { orderId: "ord_1" },
      createdAt: iso(ts.clock.now()),
      updatedAt: iso(ts.clock.now()),
      decision: {
        approved: true,
        cause: "SPEND_DECLINE_CAUSE_UNSPECIFIED",
        scope: "SCOPE_SUBJECT_APP",
        period: "PERIOD_KIND_MONTHLY",
        usage: { ...NOV, spent: money("0"), held: money("15"), limit: money("100"), remaining: money("85"), authorizations: "1", maxAuthorizations: null, authorizationsRemaining: null },
      },
    });
    expect(a.id).toMatch(/^[0-9A-Za-z]{16}$/);
    expect(a.decision.trace).toEqual([
      "SCOPE_SUBJECT_APP: base limit USD 100 per PERIOD_KIND_MONTHLY by default -> limit",
      "window 2026-11-01T00:00:00.000Z..2026-12-01T00:00:00.000Z: spent USD 0 + held USD 0 + USD 15 <= USD 100 -> approve",
    ]);
    expect(unwrap(await spend.get(a.id)).authorization).toEqual(a);
    expect(await effectiveUsage(app)).toEqual({ ...NOV, spent: money("0"), held: money("15"), limit: money("100"), remaining: money("85"), authorizations: "1", maxAuthorizations: null, authorizationsRemaining: null });
  });

  it("approves exactly up to the limit (spent + held + amount <= limit) and declines one nano more, holding nothing", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    await auth(app, "4");
    const captured = await auth(app, "3", { capture: true });
    expect(captured.decision.usage).toMatchObject({ spent: money("3"), held: money("4"), remaining: money("3") });
    const over = await authorized(spend, { userId: subject.userId, appId: app, amount: money("3", 1) });
    expect(over).toMatchObject({
      state: "SPEND_AUTHORIZATION_STATE_DECLINED",
      expiresAt: null,
      capturedAmount: money("0"),
      decision: { approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED", scope: "SCOPE_SUBJECT_APP", usage: { spent: money("3"), held: money("4"), remaining: money("3") } },
    });
    expect(over.decision.trace.at(-1)).toBe(`window ${NOV.windowStart}..${NOV.windowEnd}: spent USD 3 + held USD 4 + USD 3.000000001 > USD 10 -> decline`);
    const exact = await auth(app, "3");
    expect(exact.decision).toMatchObject({ approved: true, usage: { held: money("7"), remaining: money("0") } });
    expect((await auth(app, "0", { amount: money("0", 1) })).decision.approved).toBe(false);
    // Declined ones hold nothing: the usage is unchanged by them.
    expect(await effectiveUsage(app)).toEqual({ ...NOV, spent: money("3"), held: money("7"), limit: money("10"), remaining: money("0"), authorizations: "3", maxAuthorizations: null, authorizationsRemaining: null });
  });

  it("a limit lowered mid-window below what is spent declines further spends (remaining 0, never negative); raised, it admits at once", async () => {
    const app = await appWithLimit(admin, subject.userId, "50");
    await auth(app, "40", { capture: true });
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("30") }));
    expect(await effectiveUsage(app)).toMatchObject({ spent: money("40"), held: money("0"), limit: money("30"), remaining: money("0") });
    const declined = await auth(app, "1");
    expect(declined.decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED", usage: { spent: money("40"), remaining: money("0") } });
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("45") }));
    expect((await auth(app, "5")).decision).toMatchObject({ approved: true, usage: { spent: money("40"), held: money("5"), limit: money("45"), remaining: money("0") } });
  });

  it("an unexpired extension's amount replaces the limit while it lasts, and the base limit applies again after it", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    const expiresAt = iso(ts.clock.now() + 60_000);
    unwrap(await admin.setExtension(subject.userId, app, { limit: amount("20"), expiresAt, reason: "trip" }));
    const a = await auth(app, "15");
    expect(a.decision).toMatchObject({ approved: true, scope: "SCOPE_SUBJECT_APP", usage: { limit: money("20"), remaining: money("5") } });
    expect(a.decision.trace[0]).toBe(`SCOPE_SUBJECT_APP: extension until ${expiresAt} USD 20 per PERIOD_KIND_MONTHLY by default -> limit`);
    ts.clock.advance(60_000);
    // The hold (600 s) still counts; the limit is 10 again: 15 held is over it.
    const b = await auth(app, "1");
    expect(b.decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED", usage: { held: money("15"), limit: money("10"), remaining: money("0") } });
  });
});

describe("Authorize declines by cause, holding nothing", () => {
  it("a suspension declines SUSPENDED; blocked declines BLOCKED; no limit anywhere declines NO_LIMIT", async () => {
    const suspended = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_WEEKLY");
    await auth(suspended, "5", { capture: true });
    unwrap(await admin.suspend(subject.userId, suspended, { reason: "card reported lost" }));
    const s = await auth(suspended, "1");
    expect(s).toMatchObject({
      state: "SPEND_AUTHORIZATION_STATE_DECLINED",
      expiresAt: null,
      // The suspended row's own period picks the window (Monday 16 Nov 2026).
      windowStart: "2026-11-16T00:00:00.000Z",
      windowEnd: "2026-11-23T00:00:00.000Z",
      decision: {
        approved: false,
        cause: "SPEND_DECLINE_CAUSE_SUSPENDED",
        scope: "SCOPE_SUBJECT_APP",
        period: "PERIOD_KIND_WEEKLY",
        trace: ['SCOPE_SUBJECT_APP: suspended ("card reported lost") -> deny'],
        usage: { spent: money("5"), held: money("0"), limit: null, remaining: null },
      },
    });

    const blocked = await appWithLimit(admin, subject.userId, BLOCKED);
    expect((await auth(blocked, "1")).decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_BLOCKED", scope: "SCOPE_SUBJECT_APP", period: "PERIOD_KIND_MONTHLY", usage: { limit: null, remaining: null } });

    const none = newAppId();
    const n = await auth(none, "1");
    expect(n).toMatchObject({ ...NOV, decision: { approved: false, cause: "SPEND_DECLINE_CAUSE_NO_LIMIT", scope: "SCOPE_UNSPECIFIED", period: "PERIOD_KIND_MONTHLY", usage: { spent: money("0"), held: money("0"), limit: null, remaining: null } } });
    expect(n.decision.trace.at(-1)).toBe("no layer states an opinion -> deny");
    // Stored: Get shows the declined one.
    expect(unwrap(await spend.get(n.id)).authorization).toEqual(n);
  });

  it("the app cap and the tenant default decide when the subject has no row", async () => {
    const app = newAppId();
    unwrap(await admin.capSet(app, { controls: { limit: amount("5"), period: "PERIOD_KIND_DAILY" } }));
    const a = await auth(app, "5");
    expect(a).toMatchObject({ windowStart: "2026-11-20T00:00:00.000Z", windowEnd: "2026-11-21T00:00:00.000Z", decision: { approved: true, scope: "SCOPE_APP_CAP", period: "PERIOD_KIND_DAILY" } });
    expect((await auth(app, "1")).decision.cause).toBe("SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED");
  });
});

describe("unlimited: always approved, fully accounted", () => {
  it("approves and accounts spent and held, with limit and remaining null", async () => {
    const app = await appWithLimit(admin, subject.userId, UNLIMITED);
    await auth(app, "1000000", { capture: true });
    const a = await auth(app, "250");
    expect(a.decision).toMatchObject({ approved: true, cause: "SPEND_DECLINE_CAUSE_UNSPECIFIED", usage: { spent: money("1000000"), held: money("250"), limit: null, remaining: null } });
    expect(a.decision.trace.at(-1)).toBe(`window ${NOV.windowStart}..${NOV.windowEnd}: spent USD 1000000 + held USD 0 + USD 250, unlimited -> approve`);
    expect(await effectiveUsage(app)).toEqual({ ...NOV, spent: money("1000000"), held: money("250"), limit: null, remaining: null, authorizations: "2", maxAuthorizations: null, authorizationsRemaining: null });
  });

  it("amounts up to int64 max nanos are exact; a sum past int64 is 409 USAGE_OUT_OF_RANGE and changes nothing", async () => {
    const app = await appWithLimit(admin, subject.userId, UNLIMITED);
    const big = await auth(app, "9223372036", { amount: money("9223372036", 854_775_806), capture: true });
    expect(big.amount).toEqual(money("9223372036", 854_775_806));
    expect(big.decision.usage.spent).toEqual(money("9223372036", 854_775_806));
    const last = await auth(app, "0", { amount: money("0", 1) });
    expect(last.decision.usage).toMatchObject({ spent: money("9223372036", 854_775_806), held: money("0", 1) });
    const r = await spend.authorize({ userId: subject.userId, appId: app, amount: money("0", 1) });
    expectError(r, 409, "USAGE_OUT_OF_RANGE");
    expect((r.error as { message: string }).message).toBe("the window's usage plus this amount does not fit in an int64 of nanos");
    expect(await effectiveUsage(app)).toMatchObject({ spent: money("9223372036", 854_775_806), held: money("0", 1) });
    expect(unwrap(await spend.list({ app_id: app })).list).toHaveLength(2);
  });

  it("an amount limit of int64 max admits int64 max exactly, and declines a nano more", async () => {
    const app = await appWithLimit(admin, subject.userId, { amount: { money: MAX_MONEY }, blocked: null, unlimited: null });
    const a = await auth(app, "0", { amount: MAX_MONEY });
    expect(a.decision).toMatchObject({ approved: true, usage: { held: MAX_MONEY, limit: MAX_MONEY, remaining: money("0") } });
    expect((await auth(app, "0", { amount: money("0", 1) })).decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED" });
  });
});

describe("the window of each period", () => {
  const cases: [string, string, string][] = [
    ["PERIOD_KIND_DAILY", "2026-11-20T00:00:00.000Z", "2026-11-21T00:00:00.000Z"],
    ["PERIOD_KIND_WEEKLY", "2026-11-16T00:00:00.000Z", "2026-11-23T00:00:00.000Z"],
    ["PERIOD_KIND_MONTHLY", "2026-11-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z"],
    ["PERIOD_KIND_QUARTERLY", "2026-10-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z"],
    ["PERIOD_KIND_YEARLY", "2026-01-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z"],
  ];
  for (const [period, windowStart, windowEnd] of cases) {
    it(`${period}: the authorization, its decision's usage and GetEffective's usage name the same window`, async () => {
      const app = await appWithLimit(admin, subject.userId, "10", period);
      const a = await auth(app, "2");
      expect(a).toMatchObject({ windowStart, windowEnd, decision: { period, usage: { windowStart, windowEnd } } });
      expect(await effectiveUsage(app)).toMatchObject({ windowStart, windowEnd, held: money("2"), remaining: money("8") });
    });
  }

  it("a spend counts in its own window only: the next window starts empty", async () => {
    const app = await appWithLimit(admin, subject.userId, "10", "PERIOD_KIND_DAILY");
    await auth(app, "10", { capture: true });
    expect((await auth(app, "1")).decision.approved).toBe(false);
    ts.clock.advance(DAY);
    const next = await auth(app, "10");
    expect(next).toMatchObject({ windowStart: "2026-11-21T00:00:00.000Z", decision: { approved: true, usage: { spent: money("0"), held: money("10") } } });
    ts.clock.advance(-DAY);
  });
});

describe("Authorize refuses bad requests, changing nothing", () => {
  it("400s: amount zero, another currency, out of int64, holdSeconds with capture, holdSeconds out of range, no Idempotency-Key", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const body = (extra: object) => ({ userId: subject.userId, appId: app, amount: money("1"), ...extra });
    const cases: [object, string, string, string | null | undefined][] = [
      [{ amount: money("0") }, "AMOUNT_NOT_POSITIVE", "body.amount: must be greater than zero", undefined],
      [{ amount: money("1", 0, "EUR") }, "CURRENCY_MISMATCH", "body.amount.currencyCode: must be the fund currency USD", undefined],
      [{ amount: money("9223372036", 854_775_808) }, "MONEY_OUT_OF_RANGE", "body.amount.units: units * 10^9 + nanos must fit in an int64", undefined],
      [{ capture: true, holdSeconds: 60 }, "HOLD_WITH_CAPTURE", "body.holdSeconds: must not be sent with capture true", undefined],
      [{ holdSeconds: 604_801 }, "INVALID_ARGUMENT", "body.holdSeconds: must be <= 604800", undefined],
      [{}, "INVALID_ARGUMENT", "headers.idempotency-key: must have required property 'idempotency-key'", null],
    ];
    for (const [extra, reason, message, key] of cases) {
      const r = await spend.authorize(body(extra), key);
      expectError(r, 400, reason);
      expect((r.error as { message: string }).message).toBe(message);
    }
    expect(unwrap(await spend.list({ app_id: app })).list).toEqual([]);
  });

  it("404 USER_NOT_FOUND for an unknown subject", async () => {
    const r = await spend.authorize({ userId: "noSuchUser000001", appId: newAppId(), amount: money("1") });
    expectError(r, 404, "USER_NOT_FOUND");
    expect((r.error as { message: string }).message).toBe("no user with this id");
  });

  it("holdSeconds sets the expiry; capture true holds nothing and has no expiry", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    expect((await auth(app, "1", { holdSeconds: 1 })).expiresAt).toBe(iso(ts.clock.now() + 1000));
    expect((await auth(app, "1", { holdSeconds: 604_800 })).expiresAt).toBe(iso(ts.clock.now() + 604_800_000));
    const c = await auth(app, "1", { capture: true });
    expect(c).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", capturedAmount: money("1"), expiresAt: null, decision: { usage: { spent: money("1"), held: money("2") } } });
  });
});

describe("exactness under concurrency", () => {
  it("30 concurrent authorizations of 1.00 against 20.00 approve exactly 20", async () => {
    const app = await appWithLimit(admin, subject.userId, "20");
    const answers = await Promise.all(Array.from({ length: 30 }, () => spend.authorize({ userId: subject.userId, appId: app, amount: money("1") })));
    const states = answers.map((r) => unwrap(r).authorization.state);
    expect(states.filter((s) => s === "SPEND_AUTHORIZATION_STATE_PENDING")).toHaveLength(20);
    expect(states.filter((s) => s === "SPEND_AUTHORIZATION_STATE_DECLINED")).toHaveLength(10);
    expect(await effectiveUsage(app)).toMatchObject({ held: money("20"), remaining: money("0") });
  });
});
