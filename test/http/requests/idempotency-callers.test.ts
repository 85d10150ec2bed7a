// A replay is answered only to a caller who may make the request now (src/http/idempotency.ts):
// keys belong to the calling user, yet a credential of that user bound to other apps, or the user
// after a role was taken away, gets the refusal it would get without the key, never the kept
// answer (its credentials share keys, not answers); and refusals that depend on who asks (401,
// 403, 404) are never kept, so they neither block the corrected request nor reach another
// credential of the user as a replay.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import type { Storage } from "../../../src/storage/connect.js";
import { testDialect } from "../../support/database.js";
import type { TestServer } from "../../support/server.js";
import { expectError, type Answer, type Funds } from "../limits/helpers.js";
import { msUntil, openDatabase, setRoles } from "../identity/principal-cache-helpers.js";
import { appWithLimit, authorized, money, spends, startSpendServer, type Spends } from "../spends/helpers.js";

let ts: TestServer;
let admin: Funds;
/** The server's database, opened beside it for the role changes no operation makes. */
let storage: Storage;
let subjectId: string;
let appA: string;
let appB: string;
/** One app service user's two credentials: C1 bound to app A, C2 bound to app B only. */
let c1: Spends;
let c2: Spends;

beforeAll(async () => {
  let subject: { userId: string };
  ({ ts, admin, subject } = await startSpendServer({ RATE_LIMIT: "off" }));
  storage = await openDatabase(ts.databaseUrl);
  subjectId = subject.userId;
  [appA, appB] = [await appWithLimit(admin, subjectId, "1000"), await appWithLimit(admin, subjectId, "1000")];
  const service = await ts.userClient(["ROLE_APP_SERVICE"], "Backend", { appIds: [appA] });
  c1 = spends(service.client);
  c2 = spends(await credentialOf(service.userId, [appB]));
});
afterAll(async () => {
  await storage?.close();
  await ts?.stop();
});

/** A client acting through a new credential of `userId`, bound to `appIds`. */
async function credentialOf(userId: string, appIds: string[]): Promise<ApiClient> {
  const created = unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId } }, body: { appIds } }));
  return ts.client({ clientId: created.credential.clientId, clientSecret: created.clientSecret });
}

const replayed = (answer: Answer) => answer.response.headers.get("idempotent-replayed");
const spendOf = (appId: string, units = "10") => ({ userId: subjectId, appId, amount: money(units), metadata: { orderId: "order-42" } });

/** Asserts the caller's own refusal: this status and reason, not marked as a replay, holding none of `kept` (what only the kept answer holds). */
function expectOwnRefusal(answer: Answer, status: number, reason: string, kept: string[]): void {
  expectError(answer, status, reason);
  expect(replayed(answer)).toBeNull();
  for (const text of kept) expect(JSON.stringify(answer.error)).not.toContain(text);
}

/** Waits until the server applies a change of roles: `probe` answers `status`. */
async function untilApplied(status: number, probe: () => Promise<Answer>): Promise<void> {
  await msUntil(performance.now(), status, async () => (await probe()).response);
}

describe(`a credential bound to other apps never gets another credential's kept answer (${testDialect()})`, () => {
  it("Authorize: C2 is refused app A (403), as without the key; C1's retry is still its replay", async () => {
    const key = `order-42-${randomUUID()}`;
    const first = await c1.authorize(spendOf(appA), key);
    const kept = unwrap(first).authorization;
    expectOwnRefusal(await c2.authorize(spendOf(appA), key), 403, "APP_NOT_ALLOWED", [kept.id, "order-42"]);
    expectError(await c2.get(kept.id), 404, "AUTHORIZATION_NOT_FOUND");

    const again = await c1.authorize(spendOf(appA), key);
    expect(replayed(again)).toBe("true");
    expect(unwrap(again)).toEqual(unwrap(first));
    const listed = unwrap(await spends(ts.admin).list({ app_id: appA, page_size: 100 })).list.map((v) => v.authorization.id);
    expect(listed.filter((id) => id === kept.id)).toHaveLength(1);
  });

  it("Capture: C2 gets 404 for app A's authorization, as without the key; C1's retry is still its replay", async () => {
    const held = await authorized(c1, spendOf(appA));
    const key = randomUUID();
    const body = { amount: money("4") };
    const first = await c1.capture(held.id, body, key);
    expect(unwrap(first).authorization.capturedAmount).toEqual(money("4"));
    expectOwnRefusal(await c2.capture(held.id, body, key), 404, "AUTHORIZATION_NOT_FOUND", ["order-42", appA]);

    const again = await c1.capture(held.id, body, key);
    expect(replayed(again)).toBe("true");
    expect(unwrap(again)).toEqual(unwrap(first));
  });
});

describe(`keys belong to the user: its credentials share them, not their answers (${testDialect()})`, () => {
  it("C2's own request for app B with the key C1 used for app A is 422 IDEMPOTENCY_KEY_REUSED, and nothing is held for it", async () => {
    const key = randomUUID();
    unwrap(await c1.authorize(spendOf(appA, "3"), key));
    const before = unwrap(await spends(ts.admin).list({ app_id: appB, page_size: 100 })).list;
    const other = await c2.authorize(spendOf(appB, "3"), key);
    expectError(other, 422, "IDEMPOTENCY_KEY_REUSED");
    expect(replayed(other)).toBeNull();
    expect(unwrap(await spends(ts.admin).list({ app_id: appB, page_size: 100 })).list).toEqual(before);
  });
});

describe(`refusals that depend on who asks are not kept (${testDialect()})`, () => {
  it("403 APP_NOT_ALLOWED: the corrected request with the same key runs (not 422) and is kept", async () => {
    const key = randomUUID();
    expectError(await c2.authorize(spendOf(appA), key), 403, "APP_NOT_ALLOWED");
    const corrected = await c2.authorize(spendOf(appB), key);
    expect(corrected.response.status, JSON.stringify(corrected.error)).toBe(200);
    expect(replayed(corrected)).toBeNull();
    const made = unwrap(corrected).authorization;
    expect(made).toMatchObject({ appId: appB, state: "SPEND_AUTHORIZATION_STATE_PENDING" });
    const again = await c2.authorize(spendOf(appB), key);
    expect(replayed(again)).toBe("true");
    expect(unwrap(again).authorization).toEqual(made);
  });

  it("404 for an authorization C2 may not see is not kept: C1's same request with the key then captures", async () => {
    const held = await authorized(c1, spendOf(appA));
    const key = randomUUID();
    expectError(await c2.capture(held.id, {}, key), 404, "AUTHORIZATION_NOT_FOUND");
    const mine = await c1.capture(held.id, {}, key);
    expect(mine.response.status, JSON.stringify(mine.error)).toBe(200);
    expect(replayed(mine)).toBeNull();
    expect(unwrap(mine).authorization).toMatchObject({ id: held.id, state: "SPEND_AUTHORIZATION_STATE_CAPTURED", capturedAmount: money("10") });
  });

  it("a claimed operation's 404 is not kept either: CredentialService.Create for an unknown user, then for a real one, with one key", async () => {
    const key = randomUUID();
    const create = (userId: string) =>
      ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId }, header: { "Idempotency-Key": key } }, body: {} });
    expectError(await create("nobody0000000000"), 404, "USER_NOT_FOUND");
    const real = await create(subjectId);
    expect(real.response.status, JSON.stringify(real.error)).toBe(200);
    expect(replayed(real)).toBeNull();
  });
});

describe(`a caller whose role was taken away gets no replay (${testDialect()})`, () => {
  it("a fund admin who is now only an app service (bound to app B): its retry of an app A authorization is 403 APP_NOT_ALLOWED", async () => {
    const user = await ts.userClient(["ROLE_FUND_ADMIN", "ROLE_APP_SERVICE"], "Admin and backend", { appIds: [appB] });
    const mine = spends(user.client);
    const key = randomUUID();
    const kept = unwrap(await mine.authorize(spendOf(appA), key)).authorization;
    expect(replayed(await mine.authorize(spendOf(appA), key))).toBe("true");

    await setRoles(storage, user.userId, ["ROLE_APP_SERVICE"], { record: true });
    await untilApplied(403, () => user.client.GET("/api/v1/funds/app-caps", { params: { query: {} } }));
    expectOwnRefusal(await mine.authorize(spendOf(appA), key), 403, "APP_NOT_ALLOWED", [kept.id, "order-42"]);
  });

  it("a super admin who is now a user: its retry of UserService.Create is 403 ROLE_NOT_ALLOWED, the created user not shown", async () => {
    const user = await ts.userClient(["ROLE_SUPER_ADMIN"]);
    const key = randomUUID();
    const create = () => user.client.POST("/api/v1/users", { params: { header: { "Idempotency-Key": key } }, body: { displayName: "Made", email: `${key}@example.com`, roles: ["ROLE_USER"] } });
    const made = unwrap(await create()).user;

    await setRoles(storage, user.userId, ["ROLE_USER"], { record: true });
    await untilApplied(403, () => user.client.GET("/api/v1/users", { params: { query: { page_size: 1 } } }));
    expectOwnRefusal(await create(), 403, "ROLE_NOT_ALLOWED", [made.id!]);
  });
});
