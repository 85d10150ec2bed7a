// After the decision: Capture (whole, part with the rest released), Release, expiry at the
// instant, Reverse (part, whole, over, nothing left) restoring headroom in every window holding the
// spend's instant, even a past one, the 404 and 409s, and Idempotency-Key on every mutating spend operation.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { bootstrapToken, type TestServer } from "../../support/server.js";
import { amount, DAY, expectError, type Funds, iso } from "../limits/helpers.js";
import { appWithLimit, authorized, money, spends, spendServerForFile, type Authorization, type Spends } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let subject: { userId: string; f: Funds; s: Spends };

spendServerForFile((server) => void ({ ts, admin, spend, subject } = server));

const auth = (appId: string, units: string, extra: object = {}) => authorized(spend, { userId: subject.userId, appId, amount: money(units), ...extra });
const usage = async (appId: string) => unwrap(await admin.effective(subject.userId, appId)).effective.usage;
const messageOf = (r: { error?: unknown }) => (r.error as { message: string }).message;
const stateMeta = (r: { error?: unknown }) => (r.error as { details: { metadata?: Record<string, string> }[] }).details[0]!.metadata;

describe("Capture", () => {
  it("captures the whole hold without an amount: held moves to spent", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const a = await auth(app, "15");
    ts.clock.advance(1000);
    const c = unwrap(await spend.capture(a.id)).authorization;
    expect(c).toEqual({ ...a, state: "SPEND_AUTHORIZATION_STATE_CAPTURED", capturedAmount: money("15"), updatedAt: iso(ts.clock.now()) });
    expect(await usage(app)).toMatchObject({ spent: money("15"), held: money("0"), remaining: money("85") });
    expect(unwrap(await spend.get(a.id)).authorization).toEqual(c);
  });

  it("captures a part and releases the rest at once", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const a = await auth(app, "15");
    const c = unwrap(await spend.capture(a.id, { amount: money("12", 500_000_000) })).authorization;
    expect(c).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", amount: money("15"), capturedAmount: money("12", 500_000_000) });
    expect(await usage(app)).toMatchObject({ spent: money("12", 500_000_000), held: money("0"), remaining: money("87", 500_000_000) });
  });

  it("refuses 0, more than the hold, another currency (400) and a non-pending authorization (409), changing nothing", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const a = await auth(app, "15");
    const zero = await spend.capture(a.id, { amount: money("0") });
    expectError(zero, 400, "AMOUNT_NOT_POSITIVE");
    expect(messageOf(zero)).toBe("body.amount: must be greater than zero");
    const over = await spend.capture(a.id, { amount: money("15", 1) });
    expectError(over, 400, "AMOUNT_EXCEEDS_HOLD");
    expect(messageOf(over)).toBe("body.amount: must not exceed the authorized amount");
    const eur = await spend.capture(a.id, { amount: money("1", 0, "EUR") });
    expectError(eur, 400, "CURRENCY_MISMATCH");
    expect(messageOf(eur)).toBe("body.amount.currencyCode: must be the fund currency USD");
    expect(unwrap(await spend.get(a.id)).authorization).toEqual(a);

    unwrap(await spend.release(a.id));
    const released = await spend.capture(a.id);
    expectError(released, 409, "AUTHORIZATION_NOT_PENDING");
    expect(messageOf(released)).toBe("only a pending authorization can be captured");
    expect(stateMeta(released)).toEqual({ state: "SPEND_AUTHORIZATION_STATE_RELEASED" });

    const captured = await auth(app, "1", { capture: true });
    const again = await spend.capture(captured.id);
    expectError(again, 409, "AUTHORIZATION_NOT_PENDING");
    expect(stateMeta(again)).toEqual({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED" });

    const blockedApp = await appWithLimit(admin, subject.userId, "1");
    const declined = await auth(blockedApp, "2");
    const d = await spend.capture(declined.id);
    expectError(d, 409, "AUTHORIZATION_NOT_PENDING");
    expect(stateMeta(d)).toEqual({ state: "SPEND_AUTHORIZATION_STATE_DECLINED" });
    expect(await usage(app)).toMatchObject({ spent: money("1"), held: money("0") });
  });
});

describe("expiry", () => {
  it("a hold stops counting at its expiresAt exactly, is answered EXPIRED, and can be neither captured nor released", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    const a = await auth(app, "10", { holdSeconds: 60 });
    ts.clock.advance(59_999);
    expect(await usage(app)).toMatchObject({ held: money("10"), remaining: money("0") });
    expect((await auth(app, "1")).decision.approved).toBe(false);
    expect(unwrap(await spend.get(a.id)).authorization.state).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
    ts.clock.advance(1);
    expect(await usage(app)).toMatchObject({ held: money("0"), remaining: money("10") });
    expect(unwrap(await spend.get(a.id)).authorization).toEqual({ ...a, state: "SPEND_AUTHORIZATION_STATE_EXPIRED" });
    const c = await spend.capture(a.id);
    expectError(c, 409, "AUTHORIZATION_NOT_PENDING");
    expect(stateMeta(c)).toEqual({ state: "SPEND_AUTHORIZATION_STATE_EXPIRED" });
    const r = await spend.release(a.id);
    expectError(r, 409, "AUTHORIZATION_NOT_PENDING");
    expect(stateMeta(r)).toEqual({ state: "SPEND_AUTHORIZATION_STATE_EXPIRED" });
    // The headroom is back at once.
    expect((await auth(app, "10")).decision.approved).toBe(true);
  });
});

describe("Release", () => {
  it("voids a pending hold; releasing again answers it unchanged; a captured one is 409", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    const a = await auth(app, "7");
    ts.clock.advance(1000);
    const r = unwrap(await spend.release(a.id)).authorization;
    expect(r).toEqual({ ...a, state: "SPEND_AUTHORIZATION_STATE_RELEASED", updatedAt: iso(ts.clock.now()) });
    expect(await usage(app)).toMatchObject({ held: money("0"), remaining: money("10") });
    ts.clock.advance(1000);
    expect(unwrap(await spend.release(a.id)).authorization).toEqual(r);
    const captured = await auth(app, "1", { capture: true });
    const refused = await spend.release(captured.id);
    expectError(refused, 409, "AUTHORIZATION_NOT_PENDING");
    expect(messageOf(refused)).toBe("only a pending authorization can be released");
    expect(stateMeta(refused)).toEqual({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED" });
    const body = await spend.release(a.id, { extra: 1 });
    expectError(body, 400, "INVALID_ARGUMENT");
    expect(messageOf(body)).toBe("body: must NOT have more than 0 properties");
  });
});

describe("Reverse", () => {
  it("reverses a part, then the rest without an amount; the state stays CAPTURED; then nothing is left (409)", async () => {
    const app = await appWithLimit(admin, subject.userId, "20");
    const a = await auth(app, "15", { capture: true });
    expect(await usage(app)).toMatchObject({ spent: money("15"), remaining: money("5") });
    const part = unwrap(await spend.reverse(a.id, { amount: money("5") })).authorization;
    expect(part).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", capturedAmount: money("15"), reversedAmount: money("5") });
    expect(await usage(app)).toMatchObject({ spent: money("10"), remaining: money("10") });
    const over = await spend.reverse(a.id, { amount: money("10", 1) });
    expectError(over, 400, "AMOUNT_EXCEEDS_CAPTURED");
    expect(messageOf(over)).toBe("body.amount: must not exceed the captured amount not yet reversed");
    const zero = await spend.reverse(a.id, { amount: money("0") });
    expectError(zero, 400, "AMOUNT_NOT_POSITIVE");
    const eur = await spend.reverse(a.id, { amount: money("1", 0, "EUR") });
    expectError(eur, 400, "CURRENCY_MISMATCH");
    const rest = unwrap(await spend.reverse(a.id)).authorization;
    expect(rest).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", reversedAmount: money("15") });
    expect(await usage(app)).toMatchObject({ spent: money("0"), remaining: money("20") });
    const nothing = await spend.reverse(a.id);
    expectError(nothing, 409, "NOTHING_TO_REVERSE");
    expect(messageOf(nothing)).toBe("the captured amount is already reversed in full");
    // The headroom is usable again.
    expect((await auth(app, "20")).decision.approved).toBe(true);
  });

  it("only a captured authorization can be reversed (409 with its state)", async () => {
    const app = await appWithLimit(admin, subject.userId, "20");
    const a = await auth(app, "1");
    const r = await spend.reverse(a.id);
    expectError(r, 409, "AUTHORIZATION_NOT_CAPTURED");
    expect(messageOf(r)).toBe("only a captured authorization can be reversed");
    expect(stateMeta(r)).toEqual({ state: "SPEND_AUTHORIZATION_STATE_PENDING" });
  });

  it("a reversal restores headroom in the spend's own window, also when that window is past", async () => {
    const app = await appWithLimit(admin, subject.userId, "10", "PERIOD_KIND_DAILY");
    const yesterday = await auth(app, "10", { capture: true });
    ts.clock.advance(DAY);
    const today = await auth(app, "4", { capture: true });
    unwrap(await spend.reverse(yesterday.id, { amount: money("3") }));
    // Today's window is untouched; yesterday's lists the reversal.
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-21T00:00:00.000Z", spent: money("4"), remaining: money("6") });
    expect(unwrap(await spend.get(today.id)).authorization.reversedAmount).toEqual(money("0"));
    ts.clock.advance(-DAY);
    expect(await usage(app)).toMatchObject({ windowStart: "2026-11-20T00:00:00.000Z", spent: money("7"), remaining: money("3") });
    expect((await auth(app, "3")).decision.approved).toBe(true);
  });
});

describe("a limit's period changed to one whose window starts at the same instant", () => {
  it("each window counts every spend made inside it, whichever period decided it, and a reversal gives back to both", async () => {
    const before = ts.clock.now();
    // Monday 23 November 2026: the day's window and the week's start at the same midnight.
    ts.clock.set(Date.parse("2026-11-23T09:00:00Z"));
    try {
      const DAY_WINDOW = { windowStart: "2026-11-23T00:00:00.000Z", windowEnd: "2026-11-24T00:00:00.000Z" };
      const WEEK_WINDOW = { windowStart: "2026-11-23T00:00:00.000Z", windowEnd: "2026-11-30T00:00:00.000Z" };
      const app = await appWithLimit(admin, subject.userId, "10", "PERIOD_KIND_DAILY");
      const daily = await auth(app, "6", { capture: true });
      expect(daily).toMatchObject(DAY_WINDOW);

      // The week holds today: it counts the day's spend.
      unwrap(await admin.setLimit(subject.userId, app, { limit: amount("10"), period: "PERIOD_KIND_WEEKLY" }));
      expect(await usage(app)).toMatchObject({ ...WEEK_WINDOW, spent: money("6"), held: money("0"), remaining: money("4") });
      expect((await auth(app, "5")).decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED" });
      const weekly = await auth(app, "4");
      expect(weekly).toMatchObject({ ...WEEK_WINDOW, decision: { approved: true, usage: { spent: money("6"), held: money("4"), remaining: money("0") } } });

      // Back to daily: the day counts the week's hold, made today.
      unwrap(await admin.setLimit(subject.userId, app, { limit: amount("10"), period: "PERIOD_KIND_DAILY" }));
      expect(await usage(app)).toMatchObject({ ...DAY_WINDOW, spent: money("6"), held: money("4"), remaining: money("0") });
      unwrap(await spend.reverse(daily.id, { amount: money("2") }));
      expect(await usage(app)).toMatchObject({ ...DAY_WINDOW, spent: money("4"), remaining: money("2") });
      expect((await auth(app, "3")).decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED" });

      // The week got the reversal back too; capturing the week's hold spends it in both.
      unwrap(await admin.setLimit(subject.userId, app, { limit: amount("10"), period: "PERIOD_KIND_WEEKLY" }));
      expect(await usage(app)).toMatchObject({ ...WEEK_WINDOW, spent: money("4"), held: money("4"), remaining: money("2") });
      unwrap(await spend.capture(weekly.id, { amount: money("3") }));
      expect(await usage(app)).toMatchObject({ ...WEEK_WINDOW, spent: money("7"), held: money("0"), remaining: money("3") });
      unwrap(await admin.setLimit(subject.userId, app, { limit: amount("10"), period: "PERIOD_KIND_DAILY" }));
      expect(await usage(app)).toMatchObject({ ...DAY_WINDOW, spent: money("7"), held: money("0"), remaining: money("3") });

      // List by the shared start finds the authorizations decided in either window; their windowEnd tells them apart.
      const listed = unwrap(await spend.list({ user_id: subject.userId, app_id: app, window_start: DAY_WINDOW.windowStart })).list.map((w) => w.authorization);
      expect(listed.filter((a) => a.decision.approved).map((a) => [a.id, a.windowEnd]).sort()).toEqual(
        [
          [daily.id, DAY_WINDOW.windowEnd],
          [weekly.id, WEEK_WINDOW.windowEnd],
        ].sort(),
      );
      expect(listed.filter((a) => !a.decision.approved).map((a) => a.windowEnd).sort()).toEqual([DAY_WINDOW.windowEnd, WEEK_WINDOW.windowEnd]);
    } finally {
      ts.clock.set(before);
    }
  });
});

describe("404: unknown ids", () => {
  it("Get, Capture, Release and Reverse of an unknown id are 404 AUTHORIZATION_NOT_FOUND", async () => {
    for (const r of [await spend.get("Sa4kP9mW2xQ7rT5n"), await spend.capture("Sa4kP9mW2xQ7rT5n"), await spend.release("Sa4kP9mW2xQ7rT5n"), await spend.reverse("Sa4kP9mW2xQ7rT5n")]) {
      expectError(r, 404, "AUTHORIZATION_NOT_FOUND");
      expect(messageOf(r)).toBe("no spend authorization with this id");
      expect(stateMeta(r)).toEqual({ authorizationId: "Sa4kP9mW2xQ7rT5n" });
    }
  });
});

describe("Idempotency-Key", () => {
  it("Authorize: the same key and request answers the first answer again, with one effect", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    const body = { userId: subject.userId, appId: app, amount: money("4") };
    const first = await spend.authorize(body, "key-authorize-1");
    ts.clock.advance(1000);
    const second = await spend.authorize({ amount: money("4"), appId: app, userId: subject.userId }, "key-authorize-1");
    expect(second.response.headers.get("idempotent-replayed")).toBe("true");
    expect(unwrap(second).authorization).toEqual(unwrap(first).authorization);
    expect(await usage(app)).toMatchObject({ held: money("4") });
    expect(unwrap(await spend.list({ app_id: app })).list).toHaveLength(1);
  });

  it("the same key with another request is 422 and does nothing", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    unwrap(await spend.authorize({ userId: subject.userId, appId: app, amount: money("4") }, "key-authorize-2"));
    const r = await spend.authorize({ userId: subject.userId, appId: app, amount: money("5") }, "key-authorize-2");
    expectError(r, 422, "IDEMPOTENCY_KEY_REUSED");
    expect(await usage(app)).toMatchObject({ held: money("4") });
  });

  it("keys belong to the caller: another caller's same key is a request of its own", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    const other = await ts.userClient(["ROLE_FUND_ADMIN"]);
    const body = { userId: subject.userId, appId: app, amount: money("4") };
    const mine = unwrap(await spend.authorize(body, "key-shared")).authorization;
    const theirs = unwrap(await spends(other.client).authorize(body, "key-shared")).authorization;
    expect(theirs.id).not.toBe(mine.id);
    expect(await usage(app)).toMatchObject({ held: money("8") });
  });

  it("Capture, Release and Reverse with a key: a retry answers the first answer without a second effect", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const a: Authorization = await auth(app, "10");
    const c1 = unwrap(await spend.capture(a.id, { amount: money("6") }, "key-capture"));
    ts.clock.advance(1000);
    const c2 = await spend.capture(a.id, { amount: money("6") }, "key-capture");
    expect(c2.response.headers.get("idempotent-replayed")).toBe("true");
    expect(unwrap(c2)).toEqual(c1);
    const r1 = unwrap(await spend.reverse(a.id, { amount: money("1") }, "key-reverse"));
    const r2 = unwrap(await spend.reverse(a.id, { amount: money("1") }, "key-reverse"));
    expect(r2).toEqual(r1);
    expect(r2.authorization.reversedAmount).toEqual(money("1"));
    expectError(await spend.reverse(a.id, { amount: money("2") }, "key-reverse"), 422, "IDEMPOTENCY_KEY_REUSED");
    expectError(await spend.capture(a.id, { amount: money("5") }, "key-capture"), 422, "IDEMPOTENCY_KEY_REUSED");
    const b = await auth(app, "3");
    const l1 = unwrap(await spend.release(b.id, {}, "key-release"));
    const l2 = await spend.release(b.id, {}, "key-release");
    expect(l2.response.headers.get("idempotent-replayed")).toBe("true");
    expect(unwrap(l2)).toEqual(l1);
    expectError(await spend.release(a.id, {}, "key-release"), 422, "IDEMPOTENCY_KEY_REUSED");
    expect(await usage(app)).toMatchObject({ spent: money("5"), held: money("0") });
  });
});

describe("bodies that are not JSON", () => {
  it("are 400 MALFORMED_BODY on every mutating spend operation, and change nothing", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const a = await auth(app, "1");
    const token = await bootstrapToken(ts.url);
    const base = `${ts.url}/api/v1/funds/spend-authorizations`;
    for (const url of [base, `${base}/${a.id}/capture`, `${base}/${a.id}/release`, `${base}/${a.id}/reverse`]) {
      const r = await fetch(url, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Idempotency-Key": `malformed-${url}` }, body: '{"amount":' });
      const body = (await r.json()) as { message: string };
      expect([r.status, body.message], url).toEqual([400, "the request body is not valid JSON"]);
    }
    expect(unwrap(await spend.get(a.id)).authorization).toEqual(a);
  });

  it("Get takes no query parameter (400)", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const a = await auth(app, "1");
    const r = await ts.admin.GET("/api/v1/funds/spend-authorizations/{authorization_id}", { params: { path: { authorization_id: a.id }, query: { state: "x" } as never } });
    expectError(r, 400, "INVALID_ARGUMENT");
    expect(messageOf(r)).toBe("query.state: Unknown query parameter 'state'");
  });
});
