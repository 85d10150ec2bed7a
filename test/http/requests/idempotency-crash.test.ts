// Every idempotent operation keeps its answer in the transaction of its effect. Modelled crash: the
// process dies after the effect committed, before any later write (here: every separate write of a
// kept answer fails, as if the process had died there). A retry with the same key once the dead
// attempt's lease has lapsed must replay the first answer, never make a second user, credential,
// automation, authorization or reversal, nor rotate a secret twice. And an attempt that finds its
// key held by another when it keeps its answer rolls its effect back.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createHash, randomUUID } from "node:crypto";
import { unwrap } from "../../../src/client/index.js";
import { IdempotencyRecords } from "../../../src/storage/idempotency-records.js";
import { withDatabase } from "../../support/old-database.js";
import { expectError } from "../limits/helpers.js";
import { createHooked } from "../webhooks/helpers.js";
import { appWithLimit, money, spends, startSpendServer, type SpendServer } from "../spends/helpers.js";

let server: SpendServer;
beforeAll(async () => {
  server = await startSpendServer();
});
afterAll(async () => server?.ts.stop());
afterEach(() => vi.restoreAllMocks());

/** Past the lease of an attempt that stopped answering. */
const LEASE_LAPSED_MS = 61_000;

/** Every write of a kept answer outside the effect's transaction fails: `complete` after a claim, `keep` without a transaction. */
function dieBeforeSeparateAnswerWrite(): void {
  vi.spyOn(IdempotencyRecords.prototype, "complete").mockRejectedValue(new Error("process died"));
  const keep = IdempotencyRecords.prototype.keep;
  vi.spyOn(IdempotencyRecords.prototype, "keep").mockImplementation(function (this: IdempotencyRecords, record, db) {
    return db ? keep.call(this, record, db) : Promise.reject(new Error("process died"));
  });
}

describe("idempotent spends across a crash after the effect", () => {
  it("Authorize: the retry after the lease lapsed replays the first authorization; one hold", async () => {
    const { admin, spend, subject, ts } = server;
    const app = await appWithLimit(admin, subject.userId, "10");
    const body = { userId: subject.userId, appId: app, amount: money("4") };
    dieBeforeSeparateAnswerWrite();
    const first = await spend.authorize(body, "crash-authorize-1");
    vi.restoreAllMocks();
    ts.clock.advance(LEASE_LAPSED_MS);
    const retry = await spend.authorize(body, "crash-authorize-1");
    expect(retry.response.status).toBe(200);
    expect(retry.response.headers.get("idempotent-replayed")).toBe("true");
    if (first.response.status === 200) expect(unwrap(retry)).toEqual(unwrap(first));
    const listed = unwrap(await spend.list({ app_id: app }));
    expect(listed.list).toHaveLength(1);
  });

  it("Reverse in part: the retry replays the first reversal; reversed once", async () => {
    const { admin, spend, subject, ts } = server;
    const app = await appWithLimit(admin, subject.userId, "10");
    const a = unwrap(await spend.authorize({ userId: subject.userId, appId: app, amount: money("6"), capture: true })).authorization;
    dieBeforeSeparateAnswerWrite();
    await spend.reverse(a.id, { amount: money("2") }, "crash-reverse-1");
    vi.restoreAllMocks();
    ts.clock.advance(LEASE_LAPSED_MS);
    const retry = await spend.reverse(a.id, { amount: money("2") }, "crash-reverse-1");
    expect(retry.response.status).toBe(200);
    expect(unwrap(retry).authorization.reversedAmount).toEqual(money("2"));
    expect(unwrap(await spend.get(a.id)).authorization.reversedAmount).toEqual(money("2"));
  });

  it("an attempt that finds its key held by another (an earlier release's claim, its lease live) rolls its effect back and answers 409 IDEMPOTENCY_KEY_IN_USE", async () => {
    const { admin, spend, subject, ts } = server;
    const app = await appWithLimit(admin, subject.userId, "10");
    const service = await ts.userClient(["ROLE_APP_SERVICE"], "held key", { appIds: [app] });
    const s = spends(service.client);
    const body = { userId: subject.userId, appId: app, amount: money("4") };
    unwrap(await s.authorize(body, "held-1"));
    // The claim of the same request under key held-2, as an instance of the earlier release writes
    // it before it runs: the fingerprint is the request's (the key is not part of it).
    const recordId = (key: string) => createHash("sha256").update(`${service.userId}\n${key}`, "utf8").digest("base64url");
    const at = (ms: number) => new Date(ms).toISOString();
    await withDatabase(ts.databaseUrl, async (db) => {
      const { fingerprint } = await db.selectFrom("idempotency_records").select("fingerprint").where("id", "=", recordId("held-1")).executeTakeFirstOrThrow();
      const claim = { id: recordId("held-2"), fingerprint, owner: randomUUID(), locked_until: at(ts.clock.now() + 60_000), answer: null, created_at: at(ts.clock.now()) };
      await db.insertInto("idempotency_records").values(claim).execute();
    });
    expectError(await s.authorize(body, "held-2"), 409, "IDEMPOTENCY_KEY_IN_USE");
    expect(unwrap(await spend.list({ app_id: app })).list).toHaveLength(1);
    expect(unwrap(await admin.effective(subject.userId, app)).effective.usage.held).toEqual(money("4"));
    // Its lease lapsed (that attempt died), the key is free: the retry runs.
    ts.clock.advance(LEASE_LAPSED_MS);
    const retry = await s.authorize(body, "held-2");
    expect([retry.response.status, retry.response.headers.get("idempotent-replayed")]).toEqual([200, null]);
    expect(unwrap(await spend.list({ app_id: app })).list).toHaveLength(2);
  });
});

describe("idempotent creations across a crash after the effect", () => {
  /** Sends `send(key)` with the separate answer write failing, then again once the lease lapsed: the replay equals the first answer. */
  async function acrossCrash<T>(send: (key: string) => Promise<{ data?: T; response: Response }>): Promise<{ first: T; retry: T }> {
    const key = randomUUID();
    dieBeforeSeparateAnswerWrite();
    const first = await send(key);
    vi.restoreAllMocks();
    expect(first.response.status).toBe(200);
    server.ts.clock.advance(LEASE_LAPSED_MS);
    const retry = await send(key);
    expect(retry.response.status).toBe(200);
    expect(retry.response.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.data).toEqual(first.data);
    return { first: first.data as T, retry: retry.data as T };
  }
  const header = (key: string) => ({ "Idempotency-Key": key });

  it("UserService.Create: one user", async () => {
    const email = `${randomUUID()}@example.com`;
    const { admin } = server.ts;
    await acrossCrash((key) => admin.POST("/api/v1/users", { params: { header: header(key) }, body: { displayName: "Crash", email, roles: ["ROLE_USER"] } }));
    // A second user with this email would have been refused 409 EMAIL_TAKEN instead of replayed.
  });

  it("CredentialService.Create: one credential, the secret shown once replayed", async () => {
    const { admin } = server.ts;
    const { userId } = server.subject;
    const count = async () => unwrap(await admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId }, query: { page_size: 100 } } })).list.length;
    const before = await count();
    await acrossCrash((key) => admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId }, header: header(key) }, body: { displayName: "crash" } }));
    expect(await count()).toBe(before + 1);
  });

  it("AutomationService.CreateAutomation and RotateWebhookSecret: one automation, one rotation", async () => {
    const { admin } = server.ts;
    const name = `crash ${randomUUID()}`;
    await acrossCrash((key) => admin.POST("/api/v1/automations", { params: { header: header(key) }, body: { automation: { displayName: name, triggers: [{ webhook: { hmac: {} } }] } } }));
    const all = unwrap(await admin.GET("/api/v1/automations", { params: { query: { page_size: 100 } } })).list;
    expect(all.filter((a) => a.automation.displayName === name)).toHaveLength(1);
    const hook = await createHooked(server.ts);
    const { first } = await acrossCrash((key) => admin.POST("/api/v1/automations/{id}/webhook-secret", { params: { path: { id: hook.id }, header: header(key) }, body: {} }));
    expect(first.webhookSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
