// Pagination of the funds lists (SubjectAppLimitService.Search, MyFundLimitsService.List,
// AppCapService.List): page sizes (default 25, below 10 reads as 10, above 100 as 100), the stable
// keyset order, the end marker, walking while rows are added, and tokens bound to their list.
// This file owns its server: it counts every row and cap there is.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { paginate, unwrap, type ApiClient } from "../../../src/client/index.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { amount, expectError, funds, type Funds, type Schemas } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
/** A user with MANY rows (apps p-000 .. p-129), one with EXACT rows (e-00 .. e-19), one with a few. */
let many: { userId: string; f: Funds; client: ApiClient };
let exact: { userId: string; f: Funds };
let few: { userId: string; f: Funds };

const MANY = 130;
const EXACT = 20;
const CAPS = 105;
const pad = (i: number, n = 3) => String(i).padStart(n, "0");
const manyApps = Array.from({ length: MANY }, (_, i) => `p-${pad(i)}`);
const exactApps = Array.from({ length: EXACT }, (_, i) => `e-${pad(i, 2)}`);
const capApps = Array.from({ length: CAPS }, (_, i) => `cap-${pad(i)}`);

async function inBatches<T>(items: T[], fn: (item: T) => Promise<unknown>, size = 10): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

beforeAll(async () => {
  ts = await startTestServer();
  admin = funds(ts.admin);
  const [m, e, f] = await Promise.all([ts.userClient(["ROLE_USER"]), ts.userClient(["ROLE_USER"]), ts.userClient(["ROLE_USER"])]);
  many = { userId: m.userId, f: funds(m.client), client: m.client };
  exact = { userId: e.userId, f: funds(e.client) };
  few = { userId: f.userId, f: funds(f.client) };
  await inBatches(manyApps, async (app) => unwrap(await admin.setLimit(many.userId, app, { limit: amount("1") })));
  await inBatches(exactApps, async (app) => unwrap(await admin.setLimit(exact.userId, app, { limit: amount("2") })));
  // `few` shares three app ids with `many`; two of its rows are suspended.
  for (const app of ["p-000", "p-001", "p-002"]) unwrap(await admin.setLimit(few.userId, app, { limit: amount("3") }));
  for (const app of ["p-001", "p-002"]) unwrap(await admin.suspend(few.userId, app, { reason: "r" }));
  unwrap(await admin.suspend(many.userId, "p-005", {}));
  await inBatches(capApps, async (app) => unwrap(await admin.capSet(app, { controls: { limit: amount("9") } })));
}, 120_000);
afterAll(async () => ts?.stop());

type SearchBody = { userIds?: string[]; appIds?: string[]; suspended?: boolean; pageSize?: number; pageToken?: string };
const search = async (body: SearchBody) => unwrap(await admin.search(body));
const keys = (page: Schemas["SubjectAppLimitServiceSearchResponse"]) => page.list.map((v) => `${v.limit.userId}/${v.limit.appId}`);

async function walkSearch(filters: SearchBody, pageSize?: number): Promise<string[]> {
  const out: string[] = [];
  for await (const v of paginate((pageToken) => search({ ...filters, ...(pageSize ? { pageSize } : {}), pageToken }))) out.push(`${v.limit.userId}/${v.limit.appId}`);
  return out;
}

const sorted = (xs: string[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

describe("page sizes: default 25, below 10 reads as 10, above 100 as 100", () => {
  it("SubjectAppLimitService.Search", async () => {
    const filters = { userIds: [many.userId] };
    expect((await search(filters)).list).toHaveLength(25);
    expect((await search({ ...filters, pageSize: 9 })).list).toHaveLength(10);
    expect((await search({ ...filters, pageSize: 1 })).list).toHaveLength(10);
    expect((await search({ ...filters, pageSize: 0 })).list).toHaveLength(10);
    expect((await search({ ...filters, pageSize: -5 })).list).toHaveLength(10);
    expect((await search({ ...filters, pageSize: 10 })).list).toHaveLength(10);
    expect((await search({ ...filters, pageSize: 37 })).list).toHaveLength(37);
    expect((await search({ ...filters, pageSize: 100 })).list).toHaveLength(100);
    const big = await search({ ...filters, pageSize: 101 });
    expect(big.list).toHaveLength(100);
    expect(big.nextPageToken).not.toBe("");
    expect((await search({ ...filters, pageSize: 100_000 })).list).toHaveLength(100);
  });

  it("MyFundLimitsService.List", async () => {
    const size = async (page_size?: number) => unwrap(await many.f.myList(page_size === undefined ? {} : { page_size })).list.length;
    expect(await size()).toBe(25);
    expect(await size(9)).toBe(10);
    expect(await size(0)).toBe(10);
    expect(await size(50)).toBe(50);
    expect(await size(101)).toBe(100);
  });

  it("AppCapService.List", async () => {
    const size = async (page_size?: number) => unwrap(await admin.capList(page_size === undefined ? {} : { page_size })).list.length;
    expect(await size()).toBe(25);
    expect(await size(9)).toBe(10);
    expect(await size(101)).toBe(100);
  });

  it("a page_size that is not an integer is 400", async () => {
    const r = await ts.admin.GET("/api/v1/funds/app-caps", { params: { query: { page_size: "ten" as never } } });
    expectError(r, 400);
  });

  it("any integer in decimal digits is a page_size, however many digits: past int32 and past a double read as 100, below zero as 10", async () => {
    const size = async (page_size: string) => unwrap(await many.f.myList({ page_size: page_size as never })).list.length;
    expect(await size("2147483648")).toBe(100);
    expect(await size("9".repeat(400))).toBe(100);
    expect(await size("-1")).toBe(10);
    expect(await size(`-${"9".repeat(400)}`)).toBe(10);
    expect(await size("0")).toBe(10);
    // In a Search body any JSON integer: 1e2 and 100.0 are the integer 100; past int32 reads as 100.
    const filters = { userIds: [many.userId] };
    expect((await search({ ...filters, pageSize: 2_147_483_648 })).list).toHaveLength(100);
    // The number as written on the wire.
    const raw = (text: string) =>
      ts.admin.POST("/api/v1/funds/subject-app-limits/search", { body: {}, bodySerializer: () => `{"userIds":["${many.userId}"],"pageSize":${text}}` });
    expect(unwrap(await raw("1e2")).list).toHaveLength(100);
    expect(unwrap(await raw("12.0")).list).toHaveLength(12);
    expectError(await raw("12.5"), 400);
  });
});

describe("order and the end of the results", () => {
  it("Search is ordered by userId, then appId", async () => {
    const all = await walkSearch({}, 100);
    expect(all).toEqual(sorted(all));
    expect(all).toHaveLength(MANY + EXACT + 3);
  });

  it("nextPageToken is empty only at the end, also when the last page is exactly full", async () => {
    const first = await search({ userIds: [exact.userId], pageSize: 10 });
    expect(first.list).toHaveLength(10);
    expect(first.nextPageToken).not.toBe("");
    const second = await search({ userIds: [exact.userId], pageSize: 10, pageToken: first.nextPageToken });
    expect(second.list).toHaveLength(10);
    expect(second.nextPageToken).toBe("");
    expect([...keys(first), ...keys(second)]).toEqual(exactApps.map((a) => `${exact.userId}/${a}`));

    const whole = await search({ userIds: [exact.userId], pageSize: 20 });
    expect(whole.list).toHaveLength(20);
    expect(whole.nextPageToken).toBe("");
    const partial = await search({ userIds: [exact.userId], pageSize: 15 });
    expect(partial.nextPageToken).not.toBe("");
    const rest = await search({ userIds: [exact.userId], pageSize: 15, pageToken: partial.nextPageToken });
    expect(rest.list).toHaveLength(5);
    expect(rest.nextPageToken).toBe("");
  });

  it("an empty result is one page with an empty token", async () => {
    expect(await search({ appIds: ["no-such-app"] })).toEqual({ list: [], nextPageToken: "" });
    expect(unwrap(await few.f.myList())).toMatchObject({ nextPageToken: "" });
  });

  it("walking every page returns every row exactly once (Search, My List, AppCap List)", async () => {
    const walked = await walkSearch({ userIds: [many.userId] }, 10);
    expect(walked).toEqual(manyApps.map((a) => `${many.userId}/${a}`));

    const mine: string[] = [];
    for await (const v of paginate(async (page_token) => unwrap(await many.f.myList({ page_size: 10, page_token })))) mine.push(v.limit.appId);
    expect(mine).toEqual(manyApps);

    const caps: string[] = [];
    for await (const v of paginate(async (page_token) => unwrap(await admin.capList({ page_size: 10, page_token })))) caps.push(v.appCap.appId);
    expect(caps).toEqual(capApps);
  });

  it("walking while rows are added: no row twice, none of the rows there at the start missed", async () => {
    const user = await ts.userClient(["ROLE_USER"]);
    const apps = Array.from({ length: 30 }, (_, i) => `m-${pad(i, 2)}`);
    for (const app of apps) unwrap(await admin.setLimit(user.userId, app, { limit: amount("1") }));

    const seen: string[] = [];
    let token = "";
    let round = 0;
    do {
      const page = await search({ userIds: [user.userId], pageSize: 10, pageToken: token });
      seen.push(...page.list.map((v) => v.limit.appId));
      token = page.nextPageToken;
      // Between pages, rows appear before the cursor, just after it and at the end.
      unwrap(await admin.setLimit(user.userId, `a-${round}`, { limit: amount("1") }));
      unwrap(await admin.setLimit(user.userId, `m-${pad(round * 10 + 9, 2)}x`, { limit: amount("1") }));
      unwrap(await admin.setLimit(user.userId, `z-${round}`, { limit: amount("1") }));
      round++;
    } while (token !== "");

    expect(new Set(seen).size).toBe(seen.length);
    for (const app of apps) expect(seen).toContain(app);
    expect(seen).toEqual(sorted(seen));
    // Rows added ahead of the cursor are served too.
    expect(seen).toContain("z-0");
    expect(seen).toContain("m-19x");
  });

  it("walking the caller's list while rows are added", async () => {
    const user = await ts.userClient(["ROLE_USER"]);
    const f = funds(user.client);
    const apps = Array.from({ length: 25 }, (_, i) => `k-${pad(i, 2)}`);
    for (const app of apps) unwrap(await f.mySetLimit(app, { limit: amount("1") }));
    const seen: string[] = [];
    let token = "";
    let round = 0;
    do {
      const page = unwrap(await f.myList({ page_size: 10, page_token: token }));
      seen.push(...page.list.map((v) => v.limit.appId));
      token = page.nextPageToken;
      unwrap(await f.mySetLimit(`b-${round}`, { limit: amount("1") }));
      unwrap(await f.mySetLimit(`y-${round}`, { limit: amount("1") }));
      round++;
    } while (token !== "");
    expect(new Set(seen).size).toBe(seen.length);
    for (const app of apps) expect(seen).toContain(app);
  });
});

describe("Search filters combine with AND; any listed id matches; an empty list does not filter", () => {
  it("userIds", async () => {
    expect(await walkSearch({ userIds: [few.userId] })).toEqual(["p-000", "p-001", "p-002"].map((a) => `${few.userId}/${a}`));
    const two = await walkSearch({ userIds: [few.userId, exact.userId] }, 100);
    expect(two).toHaveLength(EXACT + 3);
    expect(await walkSearch({ userIds: [] }, 100)).toEqual(await walkSearch({}, 100));
  });

  it("appIds", async () => {
    const rows = await walkSearch({ appIds: ["p-001", "e-03"] });
    expect(sorted(rows)).toEqual(sorted([`${many.userId}/p-001`, `${few.userId}/p-001`, `${exact.userId}/e-03`]));
    expect(rows).toEqual(sorted(rows));
  });

  it("appIds across many users, walked in small pages (page ends between two apps of one user)", async () => {
    const users = await Promise.all(Array.from({ length: 12 }, () => ts.userClient(["ROLE_USER"])));
    const apps = ["q-1", "q-2", "q-3"];
    await inBatches(
      users.flatMap((u) => apps.map((a) => [u.userId, a] as const)),
      async ([u, a]) => unwrap(await admin.setLimit(u, a, { limit: amount("1") })),
    );
    const expected = sorted(users.flatMap((u) => apps.map((a) => `${u.userId}/${a}`)));
    for (const size of [10, 11, 13]) expect(await walkSearch({ appIds: ["q-3", "q-1", "q-2"] }, size)).toEqual(expected);
    expect(await walkSearch({ appIds: ["q-2", "q-3"], suspended: false }, 10)).toEqual(expected.filter((k) => !k.endsWith("q-1")));
  });

  it("suspended", async () => {
    expect(sorted(await walkSearch({ suspended: true }))).toEqual(sorted([`${many.userId}/p-005`, `${few.userId}/p-001`, `${few.userId}/p-002`]));
    const notSuspended = await walkSearch({ suspended: false, userIds: [few.userId] });
    expect(notSuspended).toEqual([`${few.userId}/p-000`]);
  });

  it("all together", async () => {
    expect(await walkSearch({ userIds: [few.userId, many.userId], appIds: ["p-001", "p-005"], suspended: true })).toEqual(
      sorted([`${few.userId}/p-001`, `${many.userId}/p-005`]),
    );
  });

  it("the suspended filter follows Suspend and Unsuspend", async () => {
    const user = await ts.userClient(["ROLE_USER"]);
    unwrap(await admin.setLimit(user.userId, "s-1", { limit: amount("1") }));
    unwrap(await admin.suspend(user.userId, "s-1", {}));
    expect(await walkSearch({ userIds: [user.userId], suspended: true })).toEqual([`${user.userId}/s-1`]);
    unwrap(await admin.unsuspend(user.userId, "s-1"));
    expect(await walkSearch({ userIds: [user.userId], suspended: true })).toEqual([]);
    expect(await walkSearch({ userIds: [user.userId], suspended: false })).toEqual([`${user.userId}/s-1`]);
  });

  it("unknown user ids match nothing (no 404)", async () => {
    expect(await search({ userIds: ["UnknownUser00000"] })).toEqual({ list: [], nextPageToken: "" });
  });

  it("more than 100 ids in a filter is 400", async () => {
    expectError(await admin.search({ userIds: Array.from({ length: 101 }, (_, i) => `u${i}`) }), 400);
  });
});

describe("page tokens are opaque and bound to their list: forged, malformed or foreign is 400", () => {
  let searchToken: string;
  let myToken: string;
  let capToken: string;

  beforeAll(async () => {
    searchToken = (await search({ userIds: [many.userId], pageSize: 10 })).nextPageToken;
    myToken = unwrap(await many.f.myList({ page_size: 10 })).nextPageToken;
    capToken = unwrap(await admin.capList({ page_size: 10 })).nextPageToken;
    expect([searchToken, myToken, capToken].every((t) => t !== "")).toBe(true);
  });

  const badSearch = async (pageToken: string, filters: SearchBody = { userIds: [many.userId] }) =>
    expectError(await admin.search({ ...filters, pageSize: 10, pageToken }), 400, "INVALID_PAGE_TOKEN");
  const badMine = async (page_token: string, client: Funds = many.f) => expectError(await client.myList({ page_size: 10, page_token }), 400, "INVALID_PAGE_TOKEN");
  const badCaps = async (page_token: string) => expectError(await admin.capList({ page_size: 10, page_token }), 400, "INVALID_PAGE_TOKEN");

  it("an empty token is the first page", async () => {
    expect(await search({ userIds: [many.userId], pageSize: 10, pageToken: "" })).toEqual(await search({ userIds: [many.userId], pageSize: 10 }));
    expect(unwrap(await many.f.myList({ page_size: 10, page_token: "" }))).toEqual(unwrap(await many.f.myList({ page_size: 10 })));
    expect(unwrap(await admin.capList({ page_token: "" }))).toEqual(unwrap(await admin.capList()));
  });

  it("a valid token resumes where the last page ended", async () => {
    const next = await search({ userIds: [many.userId], pageSize: 10, pageToken: searchToken });
    expect(next.list[0]?.limit.appId).toBe("p-010");
  });

  it("a token has exactly one spelling: padded, another base64 alphabet, whitespace or other spare bits are 400", async () => {
    const [payload, mac] = searchToken.split(".") as [string, string];
    const standard = (part: string) => Buffer.from(part, "base64url").toString("base64");
    // The MAC's 32 bytes are 43 characters; the last carries 2 spare bits, which another character can set.
    const last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".indexOf(mac.at(-1)!);
    const spareBits = mac.slice(0, -1) + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last + 1];
    expect(Buffer.from(spareBits, "base64url")).toEqual(Buffer.from(mac, "base64url"));
    for (const token of [
      `${searchToken}=`,
      `${searchToken}==`,
      `${payload}.${standard(mac)}`,
      `${standard(payload)}.${mac}`,
      `${payload}.${mac.slice(0, 20)} ${mac.slice(20)}`,
      `${payload}.${mac.slice(0, 20)}\n${mac.slice(20)}`,
      `${payload}.${spareBits}`,
      `${payload}=.${mac}`,
    ]) {
      await badSearch(token);
    }
    await badMine(`${myToken}==`);
    await badCaps(`${capToken}=`);
    // The token as issued still resumes.
    expect((await search({ userIds: [many.userId], pageSize: 10, pageToken: searchToken })).list[0]?.limit.appId).toBe("p-010");
  });

  it("malformed tokens", async () => {
    for (const token of ["x", "abc.def", "a.b.c", "....", "%%%", "eyJhIjoxfQ", searchToken + "x", searchToken.slice(0, -2)]) {
      await badSearch(token);
      await badMine(token);
      await badCaps(token);
    }
  });

  it("forged tokens: a changed position under the old signature, or a made-up signature", async () => {
    const [payload, mac] = searchToken.split(".") as [string, string];
    const forgedKey = Buffer.from(JSON.stringify([many.userId, "p-100"])).toString("base64url");
    await badSearch(`${forgedKey}.${mac}`);
    await badSearch(`${payload}.${Buffer.alloc(32).toString("base64url")}`);
    const [myPayload, myMac] = myToken.split(".") as [string, string];
    await badMine(`${Buffer.from(JSON.stringify(["p-100"])).toString("base64url")}.${myMac}`);
    expect(myPayload).not.toBe("");
  });

  it("foreign tokens: from another list", async () => {
    await badSearch(myToken);
    await badSearch(capToken);
    await badMine(searchToken);
    await badMine(capToken);
    await badCaps(searchToken);
    await badCaps(myToken);
  });

  it("foreign tokens: the same list with other filters", async () => {
    await badSearch(searchToken, { userIds: [exact.userId] });
    await badSearch(searchToken, { userIds: [many.userId], suspended: false });
    await badSearch(searchToken, { userIds: [many.userId], appIds: ["p-050"] });
    await badSearch(searchToken, {});
    // The same filters in another order are the same list.
    const t = (await search({ userIds: [many.userId, few.userId], pageSize: 10 })).nextPageToken;
    expect((await search({ userIds: [few.userId, many.userId], pageSize: 10, pageToken: t })).list).toHaveLength(10);
  });

  it("foreign tokens: another user's list of their own rows", async () => {
    await badMine(myToken, exact.f);
    await badMine(myToken, few.f);
  });

  it("a token from another server (another key) is refused", async () => {
    const other = await startTestServer();
    try {
      const f = funds(other.admin);
      const u = await other.userClient(["ROLE_USER"]);
      for (let i = 0; i < 11; i++) unwrap(await f.setLimit(u.userId, `o-${pad(i, 2)}`, { limit: amount("1") }));
      const foreign = unwrap(await f.search({ userIds: [u.userId], pageSize: 10 })).nextPageToken;
      expect(foreign).not.toBe("");
      await badSearch(foreign, { userIds: [u.userId] });
    } finally {
      await other.stop();
    }
  });
});
