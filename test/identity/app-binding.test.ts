// The principal of an app service's token carries the apps of the credential that obtained it (not
// of the user: two credentials, two sets), read in the one authentication query; mayActForApp lets
// administrators act for every app, an app service for its own, and nobody else. The operations
// that use it (SpendService) test it through HTTP; this holds the pieces they build on.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { createLogger } from "../../src/core/logger.js";
import { PageTokens } from "../../src/core/pagination.js";
import { AccessTokens } from "../../src/identity/access-tokens.js";
import { Credentials } from "../../src/identity/credentials.js";
import { mayActForApp, type Principal, type Role } from "../../src/identity/roles.js";
import { SigningKeys } from "../../src/identity/signing-keys.js";
import { Users } from "../../src/identity/users.js";
import { ChangeWatch } from "../../src/storage/change-versions.js";
import { openStorage, type Storage } from "../../src/storage/connect.js";
import { sharedKey } from "../../src/storage/settings.js";
import { SecretBox } from "../../src/webhooks/secret-box.js";

let dir: string;
let storage: Storage;
let users: Users;
let credentials: Credentials;
let tokens: AccessTokens;
const clock = new ManualClock(Date.parse("2026-11-20T09:00:00Z"));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-binding-"));
  storage = await openStorage({ kind: "sqlite", path: join(dir, "db.sqlite") });
  const principals = new ChangeWatch(storage, "principals", createLogger("silent"));
  users = new Users(storage, clock, new PageTokens(await sharedKey(storage, "page_token_key")));
  credentials = new Credentials(storage, clock, users, new PageTokens(await sharedKey(storage, "page_token_key")), principals);
  tokens = new AccessTokens(storage, await SigningKeys.load(storage, new SecretBox(randomBytes(32)), clock, { tokenTtlSeconds: 900, rotationDays: 0 }), clock, { issuer: "http://binding.test", ttlSeconds: 900 }, principals);
});
afterAll(async () => {
  await storage?.close();
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
async function principalOf(userId: string, appIds?: string[]): Promise<Principal> {
  const { credential } = await credentials.create(userId, { displayName: "", appIds });
  const { token } = await tokens.issue(userId, credential.id);
  return tokens.authenticate(`Bearer ${token}`);
}
const userWith = async (roles: Role[]) => (await users.create({ displayName: "U", email: `u${++n}@example.com`, roles })).id;

describe("Principal.appIds", () => {
  it("are the apps of the credential behind the token: per credential, [] for every other user", async () => {
    const service = await userWith(["ROLE_APP_SERVICE"]);
    const eu = await principalOf(service, ["app-a", "app-b"]);
    const us = await principalOf(service, ["app-c"]);
    expect(eu).toMatchObject({ userId: service, roles: ["ROLE_APP_SERVICE"], appIds: ["app-a", "app-b"] });
    expect(us.appIds).toEqual(["app-c"]);
    expect((await principalOf(await userWith(["ROLE_USER"]))).appIds).toEqual([]);
  });
});

describe("mayActForApp", () => {
  it("is true for administrators on every app, for an app service on its credential's apps only, false otherwise", async () => {
    const service = await principalOf(await userWith(["ROLE_APP_SERVICE"]), ["app-a", "app-b"]);
    expect(["app-a", "app-b", "app-c", "APP-A", "app-a "].map((app) => mayActForApp(service, app))).toEqual([true, true, false, false, false]);
    for (const role of ["ROLE_SUPER_ADMIN", "ROLE_FUND_ADMIN"] as const) expect(mayActForApp(await principalOf(await userWith([role])), "app-z")).toBe(true);
    expect(mayActForApp(await principalOf(await userWith(["ROLE_USER"])), "app-a")).toBe(false);
    // A user who is also an app service acts for its apps only.
    const both = await principalOf(await userWith(["ROLE_USER", "ROLE_APP_SERVICE"]), ["app-a"]);
    expect([mayActForApp(both, "app-a"), mayActForApp(both, "app-b")]).toEqual([true, false]);
    // Apps without the role (a principal built by hand) grant nothing.
    expect(mayActForApp({ userId: "u", credentialId: "c", roles: ["ROLE_USER"], appIds: ["app-a"] }, "app-a")).toBe(false);
  });
});
