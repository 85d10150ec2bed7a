// Who may do what in the funds area: ROLE_USER only its own rows through MyFundLimitsService (each
// operation tried against another user's row), every administrator operation 403 for it;
// ROLE_FUND_ADMIN manages limits, caps and the policy and reads users, changing none; no token is 401.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { amount, DAY, expectError, funds, newAppId, type Funds, shown } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let alice: { userId: string; f: Funds; client: ApiClient };
let bob: { userId: string; f: Funds; client: ApiClient };
let fundAdmin: { userId: string; f: Funds; client: ApiClient };

beforeAll(async () => {
  ts = await startTestServer();
  admin = funds(ts.admin);
  const [a, b, fa] = await Promise.all([ts.userClient(["ROLE_USER"]), ts.userClient(["ROLE_USER"]), ts.userClient(["ROLE_FUND_ADMIN"])]);
  alice = { userId: a.userId, f: funds(a.client), client: a.client };
  bob = { userId: b.userId, f: funds(b.client), client: b.client };
  fundAdmin = { userId: fa.userId, f: funds(fa.client), client: fa.client };
});
afterAll(async () => ts?.stop());

const future = () => new Date(ts.clock.now() + DAY).toISOString();

/** Alice's row for a fresh app, with a limit and an administrator's suspension and extension. */
async function alicesRow() {
  const app = newAppId();
  unwrap(await alice.f.mySetLimit(app, { limit: amount("10"), period: "PERIOD_KIND_WEEKLY" }));
  unwrap(await admin.setExtension(alice.userId, app, { limit: amount("20"), expiresAt: future(), reason: "bump" }));
  unwrap(await admin.suspend(alice.userId, app, { reason: "hold" }));
  const row = unwrap(await admin.get(alice.userId, app)).limit;
  return { app, row };
}

describe("a ROLE_USER can never read or change another user's row", () => {
  it("Get: another user's row for the same app is not the caller's (404 ROW_NOT_FOUND)", async () => {
    const { app, row } = await alicesRow();
    expectError(await bob.f.myGet(app), 404, "ROW_NOT_FOUND");
    expect(unwrap(await admin.get(alice.userId, app)).limit).toEqual(row);
  });

  it("List: only the caller's rows", async () => {
    const { app } = await alicesRow();
    const bobsApp = newAppId();
    unwrap(await bob.f.mySetLimit(bobsApp, { limit: amount("1") }));
    const bobs = unwrap(await bob.f.myList({ page_size: 100 })).list.map((v) => v.limit.appId);
    expect(bobs).toContain(bobsApp);
    expect(bobs).not.toContain(app);
    const alices = unwrap(await alice.f.myList({ page_size: 100 })).list.map((v) => v.limit.appId);
    expect(alices).toContain(app);
    expect(alices).not.toContain(bobsApp);
  });

  it("ClearLimit: another user's row is untouched (404 for the caller)", async () => {
    const { app, row } = await alicesRow();
    expectError(await bob.f.myClearLimit(app), 404, "ROW_NOT_FOUND");
    expect(unwrap(await admin.get(alice.userId, app)).limit).toEqual(row);
  });

  it("SetLimit: creates or changes the caller's own row, never another user's", async () => {
    const { app, row } = await alicesRow();
    const bobs = unwrap(await bob.f.mySetLimit(app, { limit: amount("99") })).limit;
    expect(bobs.controls).toEqual(shown({ limit: amount("99") }));
    expect(unwrap(await admin.get(alice.userId, app)).limit).toEqual(row);
    expect(unwrap(await admin.get(bob.userId, app)).limit.controls).toEqual(shown({ limit: amount("99") }));
  });

  it("GetEffective: resolves the caller's own row, never another user's", async () => {
    const { app } = await alicesRow();
    expect(unwrap(await alice.f.myEffective(app)).effective.cause).toBe("CAUSE_SUSPENSION");
    expect(unwrap(await bob.f.myEffective(app)).effective).toMatchObject({ cause: "CAUSE_NO_LIMIT", scope: "SCOPE_UNSPECIFIED" });
  });

  it("no request can name another user: an extra user id in the query or the body is 400 and changes nothing", async () => {
    const { app, row } = await alicesRow();
    const query = await bob.client.GET("/api/v1/funds/my/app-limits", { params: { query: { user_id: alice.userId } as never } });
    expectError(query, 400);
    const body = await bob.f.mySetLimit(app, { limit: amount("1"), userId: alice.userId });
    expectError(body, 400);
    expect(unwrap(await admin.get(alice.userId, app)).limit).toEqual(row);
    expectError(await bob.f.myGet(app), 404, "ROW_NOT_FOUND");
  });

  it("another user's list token is refused", async () => {
    for (let i = 0; i < 11; i++) unwrap(await alice.f.mySetLimit(`tok-${String(i).padStart(2, "0")}`, { limit: amount("1") }));
    const token = unwrap(await alice.f.myList({ page_size: 10 })).nextPageToken;
    expect(token).not.toBe("");
    expectError(await bob.f.myList({ page_size: 10, page_token: token }), 400, "INVALID_PAGE_TOKEN");
  });

  it("answers carry no user id, tenant id or deletedAt", async () => {
    const { app } = await alicesRow();
    const answers = [
      unwrap(await alice.f.myGet(app)).limit,
      unwrap(await alice.f.mySetLimit(app, { limit: amount("11") })).limit,
      unwrap(await alice.f.myList({ page_size: 100 })).list[0]!.limit,
      unwrap(await alice.f.myClearLimit(app)).limit!,
    ];
    for (const a of answers) expect(Object.keys(a).sort()).toEqual(["appId", "controls", "createdAt", "updatedAt"]);
  });

  it("every administrator operation is 403 for a ROLE_USER, even on its own rows, and changes nothing", async () => {
    const { app, row } = await alicesRow();
    const capApp = newAppId();
    unwrap(await admin.capSet(capApp, { controls: { limit: amount("5") } }));
    const policy = unwrap(await admin.policyGet()).fundPolicy;
    for (const target of [alice.userId, bob.userId]) {
      const answers = [
        await bob.f.get(target, app),
        await bob.f.setLimit(target, app, { limit: amount("1") }),
        await bob.f.suspend(target, app, {}),
        await bob.f.unsuspend(target, app),
        await bob.f.setExtension(target, app, { limit: amount("1"), expiresAt: future() }),
        await bob.f.clearExtension(target, app),
        await bob.f.delete(target, app),
        await bob.f.effective(target, app),
        await bob.f.search({ userIds: [target] }),
        // A body that breaks the contract is still 403: roles are decided before shapes.
        await bob.f.setLimit(target, app, { limit: "nonsense" }),
      ];
      for (const r of answers) expectError(r, 403, "ROLE_NOT_ALLOWED");
    }
    for (const r of [
      await bob.f.capList(),
      await bob.f.capGet(capApp),
      await bob.f.capSet(capApp, { controls: { limit: amount("1") } }),
      await bob.f.capDelete(capApp),
      await bob.f.policyUpdate({ fundPolicy: { currencyCode: "EUR", defaultControls: null } }),
    ]) {
      expectError(r, 403, "ROLE_NOT_ALLOWED");
    }
    expect(unwrap(await admin.get(alice.userId, app)).limit).toEqual(row);
    expectError(await admin.get(bob.userId, app), 404, "ROW_NOT_FOUND");
    expect(unwrap(await admin.capGet(capApp)).appCap.controls).toEqual(shown({ limit: amount("5") }));
    expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(policy);
  });

  it("a ROLE_USER may read the fund policy (it needs the currency)", async () => {
    expect(unwrap(await bob.f.policyGet()).fundPolicy.currencyCode).toBe("USD");
  });
});

describe("ROLE_FUND_ADMIN manages limits, caps and the policy, and reads users without changing them", () => {
  it("may call every funds operation", async () => {
    const app = newAppId();
    const f = fundAdmin.f;
    unwrap(await f.setLimit(alice.userId, app, { limit: amount("3") }));
    unwrap(await f.suspend(alice.userId, app, { reason: "fund admin" }));
    unwrap(await f.setExtension(alice.userId, app, { limit: amount("4"), expiresAt: future() }));
    expect(unwrap(await f.get(alice.userId, app)).limit.controls?.suspension?.reason).toBe("fund admin");
    unwrap(await f.unsuspend(alice.userId, app));
    unwrap(await f.clearExtension(alice.userId, app));
    expect(unwrap(await f.effective(alice.userId, app)).effective.cause).toBe("CAUSE_LIMIT");
    expect(unwrap(await f.search({ userIds: [alice.userId], appIds: [app] })).list).toHaveLength(1);
    unwrap(await f.delete(alice.userId, app));
    unwrap(await f.capSet(app, { controls: { limit: amount("8") } }));
    unwrap(await f.capGet(app));
    expect(unwrap(await f.capList({ page_size: 100 })).list.map((v) => v.appCap.appId)).toContain(app);
    unwrap(await f.capDelete(app));
    const policy = unwrap(await f.policyGet()).fundPolicy;
    unwrap(await f.policyUpdate({ fundPolicy: { currencyCode: policy.currencyCode, defaultControls: policy.defaultControls }, updateMask: "defaultControls" }));
    // Its own rows, like anyone's.
    unwrap(await f.mySetLimit(app, { limit: amount("2") }));
    expect(unwrap(await f.myGet(app)).limit.controls).toEqual(shown({ limit: amount("2") }));
    expect(unwrap(await admin.get(fundAdmin.userId, app)).limit.controls).toEqual(shown({ limit: amount("2") }));
  });

  it("reads users, and is 403 on changing them and on credentials", async () => {
    const c = fundAdmin.client;
    expect(unwrap(await c.GET("/api/v1/users/{user_id}", { params: { path: { user_id: alice.userId } } })).user.id).toBe(alice.userId);
    expect(unwrap(await c.GET("/api/v1/users")).list.length).toBeGreaterThan(0);
    for (const r of [
      await c.POST("/api/v1/users", { body: { displayName: "X", email: "x@example.com", roles: ["ROLE_SUPER_ADMIN"] } }),
      await c.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: alice.userId } } }),
      await c.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: fundAdmin.userId } }, body: {} }),
    ]) {
      expectError(r, 403, "ROLE_NOT_ALLOWED");
    }
  });
});

describe("without a token", () => {
  it("every funds operation is 401", async () => {
    const f = funds(ts.anonymous);
    const app = newAppId();
    for (const r of [
      await f.get(alice.userId, app),
      await f.setLimit(alice.userId, app, { limit: amount("1") }),
      await f.suspend(alice.userId, app, {}),
      await f.search({}),
      await f.myGet(app),
      await f.myList(),
      await f.mySetLimit(app, { limit: amount("1") }),
      await f.myClearLimit(app),
      await f.myEffective(app),
      await f.capList(),
      await f.capSet(app, { controls: { limit: amount("1") } }),
      await f.policyGet(),
      await f.policyUpdate({ fundPolicy: { currencyCode: "EUR", defaultControls: null } }),
    ]) {
      expectError(r, 401);
    }
    expectError(await admin.get(alice.userId, app), 404, "ROW_NOT_FOUND");
  });
});
