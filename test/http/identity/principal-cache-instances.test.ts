// Cached principals on several server processes sharing one database, as behind a load balancer:
// a change made through one instance (a revocation) or written by anyone with the principals'
// version (a role change) takes effect on every other instance within 1 s, measured from before the
// change was sent. Each instance has first read and kept the principal.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { Storage } from "../../../src/storage/connect.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { accessToken, BOUND_MS, listUsers, msUntil, openDatabase, setRoles } from "./principal-cache-helpers.js";

const ADMIN = { clientId: "principal-admin", clientSecret: "principal-admin-secret-0123456789" };

let cluster: Instances | undefined;
let storage: Storage | undefined;
let urls: string[] = [];

beforeAll(async () => {
  // Rate limits off: the waits ask many times a second.
  cluster = await startInstances(2, ADMIN, "http://tenant.example.test", { RATE_LIMIT: "off" });
  urls = cluster.instances.map((s) => s.url);
  storage = await openDatabase(cluster.database.url);
}, 120_000);
afterAll(async () => {
  await storage?.close();
  await cluster?.stop();
}, 120_000);

let n = 0;
/** A user with `roles` and one credential, made through instance 0; its token is read and kept by both instances. */
async function userToken(roles: ("ROLE_SUPER_ADMIN" | "ROLE_USER")[], expected: number) {
  const admin = cluster!.clients[0]!;
  const { user } = unwrap(await admin.POST("/api/v1/users", { body: { displayName: "Cached", email: `cached${++n}-${Date.now()}@example.com`, roles } }));
  const created = unwrap(await admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.id! } }, body: {} }));
  const token = await accessToken(urls[1]!, created.credential.clientId, created.clientSecret);
  for (const url of urls) for (let i = 0; i < 3; i++) expect((await listUsers(url, token)).status).toBe(expected);
  return { userId: user.id!, credentialId: created.credential.id!, token };
}

describe(`cached principals on two instances on one ${testDialect()} database`, () => {
  it("a credential revoked through instance 0: refused there at once, and on instance 1 within 1 s", async () => {
    for (let i = 0; i < 2; i++) {
      const { userId, credentialId, token } = await userToken(["ROLE_SUPER_ADMIN"], 200);
      const since = performance.now();
      unwrap(await cluster!.clients[0]!.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", { params: { path: { user_id: userId, credential_id: credentialId } }, body: {} }));
      expect(await listUsers(urls[0]!, token)).toEqual({ status: 401, message: "the access token is revoked" });
      expect(await msUntil(since, 401, () => listUsers(urls[1]!, token))).toBeLessThan(BOUND_MS);
      expect(await listUsers(urls[1]!, token)).toEqual({ status: 401, message: "the access token is revoked" });
    }
  });

  it("roles changed in the database with the principals' version: every instance applies them within 1 s, granted and taken away", async () => {
    const { userId, token } = await userToken(["ROLE_USER"], 403);
    for (const [roles, status] of [
      [["ROLE_SUPER_ADMIN"], 200],
      [["ROLE_USER"], 403],
    ] as const) {
      const since = performance.now();
      await setRoles(storage!, userId, [...roles], { record: true });
      for (const url of urls) expect(await msUntil(since, status, () => listUsers(url, token)), url).toBeLessThan(BOUND_MS);
    }
  });
});
