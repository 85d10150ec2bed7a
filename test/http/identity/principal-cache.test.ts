// An access token's principal (its credential's revocation and apps, its user's roles) is read once
// and kept while the principals' change watch trusts it (src/identity/access-tokens.ts,
// src/storage/change-versions.ts): a revocation made by this instance is refused by the very next
// request; a change recorded by anyone else in the database shows within 1 s; a change not recorded
// is not seen at all, which shows that a kept principal costs no query.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { recordChange } from "../../../src/storage/change-versions.js";
import type { Storage } from "../../../src/storage/connect.js";
import { writeTransaction } from "../../../src/storage/transactions.js";
import { testDialect } from "../../support/database.js";
import type { TestServer } from "../../support/server.js";
import { accessToken, BOUND_MS, cacheTestServers, listUsers, msUntil, setRoles } from "./principal-cache-helpers.js";

const servers = cacheTestServers("principalsPoll");

async function superAdminToken(server: TestServer): Promise<{ userId: string; credentialId: string; token: string }> {
  const user = await server.userClient(["ROLE_SUPER_ADMIN"]);
  const { list } = unwrap(await server.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.userId } } }));
  const token = await accessToken(server.url, user.clientId, user.clientSecret);
  // Read, then kept.
  for (let i = 0; i < 3; i++) expect((await listUsers(server.url, token)).status).toBe(200);
  return { userId: user.userId, credentialId: list[0]!.credential.id!, token };
}

describe(`cached principals on one instance (${testDialect()})`, () => {
  it("a credential revoked through this instance: its token is refused by the very next request, every time", async () => {
    for (let i = 0; i < 2; i++) {
      const { userId, credentialId, token } = await superAdminToken(servers.local);
      unwrap(await servers.local.admin.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", { params: { path: { user_id: userId, credential_id: credentialId } }, body: {} }));
      expect(await listUsers(servers.local.url, token)).toEqual({ status: 401, message: "the access token is revoked" });
    }
  });

  it("a revocation written without its version is not seen (no query per request); once the version moves, it is within 1 s", async () => {
    const { credentialId, token } = await superAdminToken(servers.ts);
    await servers.storage.db.updateTable("credentials").set({ revoked_at: new Date().toISOString() }).where("id", "=", credentialId).execute();
    await new Promise((r) => setTimeout(r, 600));
    expect((await listUsers(servers.ts.url, token)).status).toBe(200);
    const since = performance.now();
    await writeTransaction(servers.storage, { exclusive: [] }, (db) => recordChange(db, "principals"));
    expect(await msUntil(since, 401, () => listUsers(servers.ts.url, token))).toBeLessThan(BOUND_MS);
    expect((await listUsers(servers.ts.url, token)).message).toBe("the access token is revoked");
  });

  it("when the last poll is no longer fresh, nothing kept is trusted: a revocation written without its version is seen by the next request", async () => {
    const { credentialId, token } = await superAdminToken(servers.stale);
    await servers.staleStorage.db.updateTable("credentials").set({ revoked_at: new Date().toISOString() }).where("id", "=", credentialId).execute();
    expect(await listUsers(servers.stale.url, token)).toEqual({ status: 401, message: "the access token is revoked" });
  });

  it("roles changed with the version are applied within 1 s, both ways; without it they are not read again", async () => {
    const user = await servers.ts.userClient(["ROLE_USER"]);
    const token = await accessToken(servers.ts.url, user.clientId, user.clientSecret);
    expect((await listUsers(servers.ts.url, token)).status).toBe(403);
    await setRoles(servers.storage, user.userId, ["ROLE_SUPER_ADMIN"], { record: false });
    await new Promise((r) => setTimeout(r, 600));
    expect((await listUsers(servers.ts.url, token)).status).toBe(403);
    let since = performance.now();
    await setRoles(servers.storage, user.userId, ["ROLE_SUPER_ADMIN"], { record: true });
    expect(await msUntil(since, 200, () => listUsers(servers.ts.url, token))).toBeLessThan(BOUND_MS);
    since = performance.now();
    await setRoles(servers.storage, user.userId, ["ROLE_USER"], { record: true });
    expect(await msUntil(since, 403, () => listUsers(servers.ts.url, token))).toBeLessThan(BOUND_MS);
  });
});
