// SpendService.List and who sees what: newest first, each filter (state as answered now, window),
// pages and their tokens (bound to the filters and the caller), a user's own authorizations and
// usage only (Get, List, MyFundLimits GetEffective).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { amount, DAY, expectError, funds, type Funds } from "../limits/helpers.js";
import { appWithLimit, authorized, money, newAppId, spends, startSpendServer, type Authorization, type Spends } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let subject: { userId: string; f: Funds; s: Spends };
let other: { userId: string; f: Funds; s: Spends };

beforeAll(async () => {
  ({ ts, admin, spend, subject } = await startSpendServer());
  const user = await ts.userClient(["ROLE_USER"]);
  other = { userId: user.userId, f: funds(user.client), s: spends(user.client) };
});
afterAll(async () => ts?.stop());

const messageOf = (r: { error?: unknown }) => (r.error as { message: string }).message;
const ids = (list: { authorization: Authorization }[]) => list.map((v) => v.authorization.id);
const byNewest = (as: Authorization[]) => [...as].sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1)).map((a) => a.id);

describe("List: order, filters and pages", () => {
  it("lists newest first (createdAt desc, then id desc) and filters by subject, app, state as answered now, and window", async () => {
    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_DAILY");
    const made: Authorization[] = [];
    const auth = async (extra: object, units = "1") => {
      const a = await authorized(spend, { userId: subject.userId, appId: app, amount: money(units), ...extra });
      made.push(a);
      return a;
    };
    const pending = await auth({});
    const expiring = await auth({ holdSeconds: 1 });
    const captured = await auth({ capture: true });
    const released = await auth({});
    unwrap(await spend.release(released.id));
    const declined = await auth({}, "1000");
    // Two in the same millisecond: id breaks the tie.
    const [t1, t2] = await Promise.all([auth({}), auth({})]);
    ts.clock.advance(1000);
    const tomorrowApp = app;
    ts.clock.advance(DAY);
    const nextWindow = await auth({});
    ts.clock.advance(-DAY);

    const all = unwrap(await spend.list({ app_id: app })).list;
    expect(ids(all)).toEqual(byNewest(made));
    expect(all.find((v) => v.authorization.id === expiring.id)!.authorization.state).toBe("SPEND_AUTHORIZATION_STATE_EXPIRED");
    expect(ids(unwrap(await spend.list({ app_id: app, user_id: subject.userId })).list)).toEqual(byNewest(made));
    expect(unwrap(await spend.list({ app_id: app, user_id: other.userId })).list).toEqual([]);

    const state = async (s: string) => ids(unwrap(await spend.list({ app_id: app, state: `SPEND_AUTHORIZATION_STATE_${s}` })).list);
    expect(await state("PENDING")).toEqual(byNewest([pending, t1, t2, nextWindow]));
    expect(await state("EXPIRED")).toEqual([expiring.id]);
    expect(await state("CAPTURED")).toEqual([captured.id]);
    expect(await state("RELEASED")).toEqual([released.id]);
    expect(await state("DECLINED")).toEqual([declined.id]);

    const windowOf = async (w: string) => ids(unwrap(await spend.list({ app_id: tomorrowApp, window_start: w })).list);
    expect(await windowOf("2026-11-21T00:00:00Z")).toEqual([nextWindow.id]);
    expect(await windowOf("2026-11-20T01:00:00+01:00")).toEqual(byNewest(made.filter((a) => a !== nextWindow)));
    expect(await windowOf("2026-11-19T00:00:00Z")).toEqual([]);
  });

  it("lists by created_at across the carries of the id's time digits (the order is read from the id alone)", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    // Milliseconds ending base62 ...zy, ...zz, then ...100: the id's last two time digits carry; more
    // than a page of 10, so a page token resumes within them.
    const start = ts.clock.now();
    ts.clock.set(start + 3844 - (start % 3844) + 3842);
    const made: Authorization[] = [];
    for (const step of [0, 1, 1, 0, 61, 1, 3843, 1, 0, 0, 1, 0]) {
      ts.clock.advance(step);
      made.push(await authorized(spend, { userId: subject.userId, appId: app, amount: money("1") }));
    }
    ts.clock.set(start);
    expect(ids(unwrap(await spend.list({ app_id: app })).list)).toEqual(byNewest(made));
    const paged: string[] = [];
    let token = "";
    do {
      const page = unwrap(await spend.list({ user_id: subject.userId, app_id: app, page_size: 10, ...(token ? { page_token: token } : {}) }));
      paged.push(...ids(page.list));
      token = page.nextPageToken;
    } while (token);
    expect(paged).toEqual(byNewest(made));
  });

  it("pages of page_size, resumed by tokens bound to the filters and the caller", async () => {
    const app = await appWithLimit(admin, subject.userId, "1000");
    const made: Authorization[] = [];
    for (let i = 0; i < 23; i++) {
      made.push(await authorized(spend, { userId: subject.userId, appId: app, amount: money("1") }));
      if (i % 5 === 0) ts.clock.advance(1);
    }
    const seen: string[] = [];
    let token = "";
    let pages = 0;
    do {
      const page = unwrap(await spend.list({ app_id: app, page_size: 10, ...(token ? { page_token: token } : {}) }));
      seen.push(...ids(page.list));
      token = page.nextPageToken;
      pages++;
    } while (token);
    expect(pages).toBe(3);
    expect(seen).toEqual(byNewest(made));

    const first = unwrap(await spend.list({ app_id: app, page_size: 10 }));
    const foreignFilter = await spend.list({ app_id: newAppId(), page_size: 10, page_token: first.nextPageToken });
    expectError(foreignFilter, 400, "INVALID_PAGE_TOKEN");
    expect(messageOf(foreignFilter)).toBe("query.page_token: malformed, forged or foreign page token");
    const otherAdmin = spends((await ts.userClient(["ROLE_FUND_ADMIN"])).client);
    expectError(await otherAdmin.list({ app_id: app, page_size: 10, page_token: first.nextPageToken }), 400, "INVALID_PAGE_TOKEN");
  });

  it("refuses a state of UNSPECIFIED or unknown, and a window_start out of range (400)", async () => {
    const unspecified = await spend.list({ state: "SPEND_AUTHORIZATION_STATE_UNSPECIFIED" });
    expectError(unspecified, 400, "INVALID_ARGUMENT");
    expect(messageOf(unspecified)).toBe("query.state: must be a state other than SPEND_AUTHORIZATION_STATE_UNSPECIFIED");
    const unknown = await spend.list({ state: "SPEND_AUTHORIZATION_STATE_LOST" });
    expectError(unknown, 400, "INVALID_ARGUMENT");
    expect(messageOf(unknown)).toMatch(/^query.state: must be equal to one of the allowed values: SPEND_AUTHORIZATION_STATE_UNSPECIFIED, /);
    const far = await spend.list({ window_start: "9999-12-31T23:00:00-05:00" });
    expectError(far, 400, "INVALID_TIMESTAMP");
    expect(messageOf(far)).toBe("query.window_start: must be in years 0001 to 9999 (UTC)");
  });
});

describe("a user sees their own spends and usage only", () => {
  it("Get of their own answers it; of another's is 404 as if it did not exist", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const mine = await authorized(spend, { userId: subject.userId, appId: app, amount: money("2") });
    expect(unwrap(await subject.s.get(mine.id)).authorization).toEqual(mine);
    const r = await other.s.get(mine.id);
    expectError(r, 404, "AUTHORIZATION_NOT_FOUND");
  });

  it("List without user_id lists their own; with their own id the same; with another's is 403 SUBJECT_NOT_ALLOWED", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    unwrap(await admin.setLimit(other.userId, app, { limit: amount("100") }));
    const mine = await authorized(spend, { userId: subject.userId, appId: app, amount: money("2") });
    const theirs = await authorized(spend, { userId: other.userId, appId: app, amount: money("3") });
    expect(ids(unwrap(await subject.s.list({ app_id: app })).list)).toEqual([mine.id]);
    expect(ids(unwrap(await subject.s.list({ app_id: app, user_id: subject.userId })).list)).toEqual([mine.id]);
    expect(ids(unwrap(await other.s.list({ app_id: app })).list)).toEqual([theirs.id]);
    const r = await subject.s.list({ user_id: other.userId });
    expectError(r, 403, "SUBJECT_NOT_ALLOWED");
    expect(messageOf(r)).toBe("a user may list only their own authorizations");
    expect((r.error as { details: { metadata?: object }[] }).details[0]!.metadata).toEqual({ userId: other.userId });
  });

  it("MyFundLimits GetEffective answers the user's own usage, as the administrator's GetEffective does", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    await authorized(spend, { userId: subject.userId, appId: app, amount: money("30"), capture: true });
    await authorized(spend, { userId: subject.userId, appId: app, amount: money("5") });
    const expected = { windowStart: "2026-11-01T00:00:00.000Z", windowEnd: "2026-12-01T00:00:00.000Z", spent: money("30"), held: money("5"), limit: money("100"), remaining: money("65"), authorizations: "2", maxAuthorizations: null, authorizationsRemaining: null };
    expect(unwrap(await subject.f.myEffective(app)).effective.usage).toEqual(expected);
    expect(unwrap(await admin.effective(subject.userId, app)).effective.usage).toEqual(expected);
    // Another user's window for the same app is their own (empty, and no limit: NO_LIMIT).
    expect(unwrap(await other.f.myEffective(app)).effective.usage).toMatchObject({ spent: money("0"), held: money("0"), limit: null, remaining: null });
  });
});
