// ROLE_APP_SERVICE, the role of apps' backends, through HTTP: its credentials are bound to apps at
// creation (`appIds`, answered by Create and List, `[]` for every other credential), the binding is
// per credential, the rules of binding are 400s with their own reasons, and its tokens may read the
// fund policy and nothing else among the operations that exist so far.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { expectError, funds, newAppId } from "../limits/helpers.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => ts?.stop());

let n = 0;
async function newUser(roles: ("ROLE_SUPER_ADMIN" | "ROLE_FUND_ADMIN" | "ROLE_USER" | "ROLE_APP_SERVICE")[]): Promise<string> {
  const { user } = unwrap(await ts.admin.POST("/api/v1/users", { body: { displayName: `Service ${++n}`, email: `svc${n}-${Date.now()}@example.com`, roles } }));
  return user.id!;
}

const createCredential = (userId: string, body: Record<string, unknown>) =>
  ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId } }, body: body as never });

const listCredentials = async (userId: string) =>
  unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId } } })).list.map((c) => c.credential);

describe("credentials of an app service", () => {
  it("are bound to the apps named at creation, per credential: Create and List answer them", async () => {
    const service = await newUser(["ROLE_APP_SERVICE"]);
    const first = unwrap(await createCredential(service, { displayName: "billing (eu)", appIds: ["app-salesforce", "app-zoom"] }));
    expect(first.credential).toMatchObject({ userId: service, displayName: "billing (eu)", appIds: ["app-salesforce", "app-zoom"] });
    ts.clock.advance(1000);
    const second = unwrap(await createCredential(service, { appIds: ["app:slack.v2"] }));
    expect(second.credential.appIds).toEqual(["app:slack.v2"]);
    expect((await listCredentials(service)).map((c) => [c.id, c.appIds])).toEqual([
      [first.credential.id, ["app-salesforce", "app-zoom"]],
      [second.credential.id, ["app:slack.v2"]],
    ]);
  });

  it("name 1 to 100 apps: none is 400 APP_IDS_REQUIRED, a repeated id or more than 100 is 400; nothing is created", async () => {
    const service = await newUser(["ROLE_APP_SERVICE"]);
    for (const body of [{}, { appIds: [] }, { displayName: "no apps" }]) {
      const answer = await createCredential(service, body);
      expectError(answer, 400, "APP_IDS_REQUIRED");
      expect((answer.error as { message: string }).message).toBe("body.appIds: must name 1 to 100 apps: the user holds ROLE_APP_SERVICE");
    }
    const repeated = await createCredential(service, { appIds: ["app-a", "app-a"] });
    expectError(repeated, 400, "INVALID_ARGUMENT");
    expect((repeated.error as { message: string }).message).toBe("body.appIds: must NOT have duplicate items (items ## 1 and 0 are identical)");
    const many = Array.from({ length: 101 }, (_, i) => `app-${i}`);
    expectError(await createCredential(service, { appIds: many }), 400, "INVALID_ARGUMENT");
    for (const bad of ["", "-app", "app id", "a".repeat(129)]) expectError(await createCredential(service, { appIds: [bad] }), 400, "INVALID_ARGUMENT");
    expect(await listCredentials(service)).toEqual([]);
    // The bounds themselves are accepted.
    expect(unwrap(await createCredential(service, { appIds: many.slice(0, 100) })).credential.appIds).toEqual(many.slice(0, 100));
    expect(unwrap(await createCredential(service, { appIds: ["a".repeat(128)] })).credential.appIds).toEqual(["a".repeat(128)]);
  });

  it("a user holding ROLE_APP_SERVICE with other roles is bound all the same", async () => {
    const both = await newUser(["ROLE_USER", "ROLE_APP_SERVICE"]);
    expectError(await createCredential(both, {}), 400, "APP_IDS_REQUIRED");
    expect(unwrap(await createCredential(both, { appIds: ["app-x"] })).credential.appIds).toEqual(["app-x"]);
  });
});

describe("credentials of every other user", () => {
  it("name no app: absent or [] is accepted and answered as [], any id is 400 APP_IDS_NOT_ALLOWED", async () => {
    for (const role of ["ROLE_USER", "ROLE_FUND_ADMIN", "ROLE_SUPER_ADMIN"] as const) {
      const userId = await newUser([role]);
      const answer = await createCredential(userId, { appIds: ["app-salesforce"] });
      expectError(answer, 400, "APP_IDS_NOT_ALLOWED");
      expect((answer.error as { message: string }).message).toBe("body.appIds: must be absent or empty: the user does not hold ROLE_APP_SERVICE");
      expect(await listCredentials(userId)).toEqual([]);
      expect(unwrap(await createCredential(userId, {})).credential.appIds).toEqual([]);
      expect(unwrap(await createCredential(userId, { appIds: [] })).credential.appIds).toEqual([]);
      expect((await listCredentials(userId)).map((c) => c.appIds)).toEqual([[], []]);
    }
  });

  it("the bootstrap credential is bound to no app", async () => {
    const users = unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100 } } })).list.map((u) => u.user);
    const bootstrap = users.find((u) => u.email === "admin@bootstrap.invalid")!;
    expect((await listCredentials(bootstrap.id!)).map((c) => [c.displayName, c.appIds])).toEqual([["bootstrap", []]]);
  });

  it("a revoked credential keeps its apps in the answer", async () => {
    const service = await newUser(["ROLE_APP_SERVICE"]);
    const { credential } = unwrap(await createCredential(service, { appIds: ["app-kept"] }));
    const revoked = unwrap(
      await ts.admin.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", { params: { path: { user_id: service, credential_id: credential.id! } }, body: {} }),
    );
    expect(revoked.credential).toMatchObject({ appIds: ["app-kept"], revokedAt: expect.any(String) });
  });
});

describe("an app service's token", () => {
  it("authenticates, reads the fund policy, and is refused (403 ROLE_NOT_ALLOWED) everything else that exists", async () => {
    const service = await ts.userClient(["ROLE_APP_SERVICE"], "Billing backend", { appIds: ["app-billing"] });
    expect(service.appIds).toEqual(["app-billing"]);
    const f = funds(service.client);
    expect(unwrap(await f.policyGet()).fundPolicy.currencyCode).toBe("USD");
    const someone = (await ts.userClient(["ROLE_USER"])).userId;
    const app = "app-billing";
    const refused = [
      await f.myList(),
      await f.myGet(app),
      await f.mySetLimit(app, { limit: { amount: { money: { currencyCode: "USD", units: "1", nanos: 0 } } } }),
      await f.myClearLimit(app),
      await f.myEffective(app),
      await f.get(someone, app),
      await f.effective(someone, app),
      await f.setLimit(someone, app, { limit: { blocked: {} } }),
      await f.search({}),
      await f.capList(),
      await f.capSet(newAppId(), { controls: { limit: { blocked: {} } } }),
      await f.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: null }, updateMask: "currencyCode" }),
      await service.client.GET("/api/v1/users", {}),
      await service.client.GET("/api/v1/automations", {}),
    ];
    for (const answer of refused) expectError(answer, 403, "ROLE_NOT_ALLOWED");
  });
});
