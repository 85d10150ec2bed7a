// Every idempotent operation keeps its answer in the transaction of its effect. Modelled crash: the
// process dies after the effect committed, before any later write (here: every separate write of a
// kept answer fails, as if the process had died there). A retry with the same key once the dead
// attempt's lease has lapsed must replay the first answer, never make a second user, credential,
// automation, authorization or reversal, nor rotate a secret twice. And when an attempt has lost its key to another meanwhile, its effect rolls back.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { unwrap } from "../../src/client/index.js";
import { IdempotencyRecords } from "../../src/storage/idempotency-records.js";
import { expectError } from "./funds-helpers.js";
import { createHooked } from "./webhooks-helpers.js";
import { appWithLimit, money, startSpendServer, type SpendServer } from "./spends-helpers.js";

let server: SpendServer;
beforeAll(async () => {
  server = await startSpendServer();
});
afterAll(async () => server?.ts.stop());
afterEach(() => vi.restoreAllMocks());

/** Past the lease of an attempt that stopped answering. */
const LEASE_LAPSED_MS = 61_000;

const dieBeforeSeparateAnswerWrite = () => vi.spyOn(IdempotencyRecords.prototype, "complete").mockRejectedValue(new Error("process died"));

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

  it("an attempt whose key was taken over meanwhile rolls its effect back and answers 409 IDEMPOTENCY_KEY_IN_USE", async () => {
    const { admin, spend, subject } = server;
    const app = await appWithLimit(admin, subject.userId, "10");
    // The attempt's owner token no longer holds the record, as after a takeover: the answer written
    // with the effect (by `completeIn`, or within the effect's own statement) updates nothing.
    const claim = IdempotencyRecords.prototype.claim;
    vi.spyOn(IdempotencyRecords.prototype, "claim").mockImplementation(async function (this: IdempotencyRecords, ...args) {
      const claimed = await claim.apply(this, args);
      return claimed.kind === "claimed" ? { kind: "claimed", owner: randomUUID() } : claimed;
    });
    expectError(await spend.authorize({ userId: subject.userId, appId: app, amount: money("4") }, "taken-over-1"), 409, "IDEMPOTENCY_KEY_IN_USE");
    vi.restoreAllMocks();
    expect(unwrap(await spend.list({ app_id: app })).list).toHaveLength(0);
    expect(unwrap(await admin.effective(subject.userId, app)).effective.usage.held).toEqual(money("0"));
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
