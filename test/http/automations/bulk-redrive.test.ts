// Bulk redrive through HTTP: a window of failures recovered once (each failed execution of the range
// redriven exactly once, none outside it, nothing twice on a repeated or overlapping call), redrives
// of redrives, parked executions made due, the turns at BULK_REDRIVE_PER_SECOND, the bound per call
// and its continuation, a transaction per chunk (its audit events), validation, who may, the
// Idempotency-Key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { newExecution } from "../../../src/automations/executions.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage } from "../../../src/storage/connect.js";
import type { AutomationExecutionsTable } from "../../../src/storage/schema.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { expectError } from "../limits/helpers.js";
import { automationsApi, createHooked, evaluateStep, executionsOf, expectAccepted, newEventId, sendHmac, settled, type AutomationsApi, type Execution, type Hooked } from "../webhooks/helpers.js";

const ERROR = "AUTOMATION_EXECUTION_STATE_ERROR";
const DONE = "AUTOMATION_EXECUTION_STATE_DONE";
const PARKED = "AUTOMATION_EXECUTION_STATE_PARKED";
const REDRIVE = "AUTOMATION_EXECUTION_ORIGIN_REDRIVE";
const OPERATION = "svc.api.automations.v1.AutomationExecutionService.BulkRedrive";
/** A step that fails on payloads without `missing.deeper`, and the step that fixes it. */
const failing = evaluateStep("read", { v: "ctx.trigger.missing.deeper" });
const fixed = evaluateStep("read", { v: "ctx.trigger.present" });
const PAYLOAD = { present: 1 };

let ts: TestServer;
let api: AutomationsApi;

beforeAll(async () => {
  ts = await startTestServer();
  api = automationsApi(ts.admin);
});
afterAll(async () => ts?.stop());

interface Body {
  since?: unknown;
  until?: unknown;
  includeParked?: boolean;
  continuationToken?: string;
}

const bulk = (server: TestServer, automationId: string, body: Body, key?: string) =>
  server.admin.POST("/api/v1/automations/{id}/executions/redrive", { params: { path: { id: automationId } }, body: body as never, headers: key ? { "Idempotency-Key": key } : {} });

const done = (answer: Awaited<ReturnType<typeof bulk>>) => {
  expect(answer.response.status, JSON.stringify(answer.error)).toBe(200);
  return answer.data!;
};

const iso = (ms: number) => new Date(ms).toISOString();
const now = (server: TestServer = ts) => server.clock.now();

/** Delivers `payload` to the hook and answers its execution once run. */
async function deliver(hook: Hooked, payload: unknown = PAYLOAD): Promise<Execution> {
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify(payload)));
  return settled(ts, event.automationExecutionId!);
}

const setSteps = async (hook: Hooked, steps: unknown[]) => unwrap(await api.update(hook.id, { displayName: hook.automation.displayName, automationSteps: steps }, "automationSteps"));

/** Runs `use` on a storage of its own, as another process would. */
async function withStorage<T>(server: TestServer, use: (storage: Awaited<ReturnType<typeof openStorage>>) => Promise<T>): Promise<T> {
  const storage = await openStorage(loadConfig({ DATABASE_URL: server.databaseUrl }).database);
  try {
    return await use(storage);
  } finally {
    await storage.close();
  }
}

/** Inserts executions of the automation's steps created at `at`, as `fields` say (a failed run, a parked one). */
async function inserted(server: TestServer, automationId: string, at: number, count: number, fields: Partial<AutomationExecutionsTable>): Promise<string[]> {
  return withStorage(server, async (storage) => {
    const { steps } = await storage.db.selectFrom("automations").select("steps").where("id", "=", automationId).executeTakeFirstOrThrow();
    const rows = Array.from({ length: count }, () => ({ ...newExecution(automationId, newEventId(), { trigger: PAYLOAD }, steps, iso(at)), ...fields }));
    for (let i = 0; i < rows.length; i += 200) await storage.db.insertInto("automation_executions").values(rows.slice(i, i + 200)).execute();
    return rows.map((r) => r.id);
  });
}

const failedAt = (server: TestServer, automationId: string, at: number, count = 1) =>
  inserted(server, automationId, at, count, { state: ERROR, completed_at: iso(at), step_results: JSON.stringify([{ stepName: "read", state: "STEP_STATE_ERROR", output: null, error: "failed" }]) });

/** The audit events of the bulk redrives of an automation, oldest first. */
async function audited(server: TestServer, automationId: string) {
  const answer = unwrap(await server.admin.GET("/api/v1/audit-events", { params: { query: { target_kind: "AUDIT_TARGET_KIND_AUTOMATION", target_id: automationId, operation_id: OPERATION, page_size: 100 } } }));
  return answer.list.map((e) => e.auditEvent).reverse();
}

describe("a window of failures", () => {
  it("is recovered once: every failed execution of the range redriven exactly once, none outside it, nothing on a second call", async () => {
    const hook = await createHooked(ts, { steps: [failing] });
    const other = await createHooked(ts, { steps: [failing] });
    const before = await deliver(hook);
    ts.clock.advance(60_000);
    const since = now();
    const inRange: Execution[] = [];
    for (let i = 0; i < 4; i++) {
      inRange.push(await deliver(hook));
      ts.clock.advance(1000);
    }
    const succeeded = await deliver(hook, { ...PAYLOAD, missing: { deeper: 1 } });
    const othersFailure = await deliver(other);
    ts.clock.advance(1000);
    const until = now();
    const after = await deliver(hook);
    expect([before, ...inRange, after, othersFailure].map((e) => e.state)).toEqual(Array(7).fill(ERROR));
    expect(succeeded.state).toBe(DONE);

    // One of them redriven alone first: the bulk redrive leaves it.
    const single = unwrap(await api.redrive(inRange[0]!.id)).automationExecution;
    await settled(ts, single.id);
    await setSteps(hook, [fixed]);
    ts.clock.advance(60_000);
    const at = now();

    const answer = done(await bulk(ts, hook.id, { since: iso(since), until: iso(until) }));
    expect(answer).toEqual({
      since: iso(since),
      until: iso(until),
      includeParked: true,
      examinedCount: 5,
      redrivenCount: 3,
      madeDueCount: 0,
      alreadyRedrivenCount: 1,
      lastAttemptAt: iso(at + 100),
      continuationToken: "",
    });
    await ts.server.worker.idle();
    const all = await executionsOf(ts.admin, hook.id);
    const redrives = all.filter((e) => e.origin === REDRIVE && e.id !== single.id).sort((a, b) => (a.redriveOf! < b.redriveOf! ? -1 : 1));
    // Each failure of the range once, oldest first, with the automation's current steps and the event's body.
    expect(redrives.map((e) => e.redriveOf)).toEqual(inRange.slice(1).map((e) => e.id));
    for (const [i, r] of redrives.entries()) {
      expect(r).toMatchObject({ automationId: hook.id, eventId: inRange[i + 1]!.eventId, context: inRange[i + 1]!.context, createdAt: iso(at), redrivenBy: null });
    }
    // In turn at 20 a second: the first due at once (run already), the others parked until their turn.
    expect(redrives.map((e) => [e.state, e.nextAttemptAt])).toEqual([
      [DONE, null],
      [PARKED, iso(at + 50)],
      [PARKED, iso(at + 100)],
    ]);
    const byId = new Map(all.map((e) => [e.id, e]));
    for (const outside of [before, after, succeeded]) expect(byId.get(outside.id)!.redrivenBy).toBeNull();
    expect((await executionsOf(ts.admin, other.id)).map((e) => e.id)).toEqual([othersFailure.id]);

    // Once their turn came they run, with the fixed step.
    ts.clock.advance(100);
    ts.server.worker.notify();
    for (const r of redrives) expect((await settled(ts, r.id)).state).toBe(DONE);

    // The same call again, or one overlapping it, redrives nothing more; a single Redrive of one is refused.
    const again = done(await bulk(ts, hook.id, { since: iso(since), until: iso(until) }));
    expect(again).toMatchObject({ examinedCount: 5, redrivenCount: 0, madeDueCount: 0, alreadyRedrivenCount: 4, lastAttemptAt: null, continuationToken: "" });
    expectError(await api.redrive(inRange[2]!.id), 409, "EXECUTION_ALREADY_REDRIVEN");
    expect(await executionsOf(ts.admin, hook.id)).toHaveLength(all.length);
  });

  it("a failed redrive is a failed execution of the range holding its own createdAt: redriven in turn, once", async () => {
    const hook = await createHooked(ts, { steps: [failing] });
    const since = now();
    const first = await deliver(hook);
    ts.clock.advance(1000);
    const redrive = unwrap(await api.redrive(first.id)).automationExecution;
    expect((await settled(ts, redrive.id)).state).toBe(ERROR);
    ts.clock.advance(1000);
    // A range holding the first failure only: already redriven, nothing to do.
    expect(done(await bulk(ts, hook.id, { since: iso(since), until: iso(since + 1000) }))).toMatchObject({ examinedCount: 1, redrivenCount: 0, alreadyRedrivenCount: 1 });
    const answer = done(await bulk(ts, hook.id, { since: iso(since), until: iso(now()) }));
    expect(answer).toMatchObject({ examinedCount: 2, redrivenCount: 1, alreadyRedrivenCount: 1 });
    const latest = (await executionsOf(ts.admin, hook.id))[0]!;
    expect(latest).toMatchObject({ origin: REDRIVE, redriveOf: redrive.id, eventId: first.eventId });
  });
});

describe("parked executions", () => {
  it("are made due in their turn, never later than they were, keeping their step results; not with includeParked false", async () => {
    const hook = await createHooked(ts, { steps: [fixed] });
    const since = now();
    const results = JSON.stringify([{ stepName: "read", state: "STEP_STATE_PENDING", output: { webhookId: "x_read", delivered: false, attempts: [] }, error: null }]);
    const [failed] = await failedAt(ts, hook.id, since);
    const parked = { state: PARKED, next_attempt_at: iso(since + 3_600_000) };
    // In the order of their createdAt: the first parked one takes the first turn (due at once, run), the next ones wait for theirs.
    const [first] = await inserted(ts, hook.id, since + 1, 1, parked);
    const [late] = await inserted(ts, hook.id, since + 2, 1, { ...parked, step_results: results });
    const [soon] = await inserted(ts, hook.id, since + 3, 1, parked);
    ts.clock.advance(1000);
    const at = now();
    // Due sooner than its turn in the second call below (at + 1000 + 100) would be: kept.
    await withStorage(ts, (s) => s.db.updateTable("automation_executions").set({ next_attempt_at: iso(at + 1020) }).where("id", "=", soon!).execute());

    const untouched = done(await bulk(ts, hook.id, { since: iso(since), until: iso(at), includeParked: false }));
    expect(untouched).toMatchObject({ examinedCount: 4, redrivenCount: 1, madeDueCount: 0, lastAttemptAt: iso(at) });
    expect(unwrap(await api.execution(late!)).automationExecution.nextAttemptAt).toBe(iso(since + 3_600_000));

    ts.clock.advance(1000);
    const at2 = now();
    const answer = done(await bulk(ts, hook.id, { since: iso(since), until: iso(at) }));
    expect(answer).toMatchObject({ examinedCount: 4, redrivenCount: 0, madeDueCount: 3, alreadyRedrivenCount: 1, lastAttemptAt: iso(at2 + 100) });
    const moved = unwrap(await api.execution(late!)).automationExecution;
    expect(moved).toMatchObject({ state: PARKED, nextAttemptAt: iso(at2 + 50) });
    expect(moved.stepResults).toEqual(JSON.parse(results));
    expect(unwrap(await api.execution(soon!)).automationExecution.nextAttemptAt).toBe(iso(at2 + 20));
    expect((await settled(ts, first!)).state).toBe(DONE);
    // Once their turn came, the worker runs them.
    ts.clock.advance(50);
    ts.server.worker.notify();
    for (const id of [late!, soon!]) expect((await settled(ts, id)).state).toBe(DONE);
    expect(unwrap(await api.execution(failed!)).automationExecution.redrivenBy).not.toBeNull();
  });
});

describe("bounded work", () => {
  let small: TestServer;
  beforeAll(async () => void (small = await startTestServer({ BULK_REDRIVE_MAX_PER_CALL: "250", BULK_REDRIVE_PER_SECOND: "4" })));
  afterAll(async () => small?.stop());

  it("looks at BULK_REDRIVE_MAX_PER_CALL executions per call, a hundred per transaction, and continues where it stopped, its turns too", async () => {
    const hook = await createHooked(small, { steps: [fixed] });
    const since = now(small);
    const ids = await failedAt(small, hook.id, since, 300);
    small.clock.advance(1000);
    const at = now(small);
    const body = { since: iso(since), until: iso(at) };

    const first = done(await bulk(small, hook.id, body));
    expect(first).toMatchObject({ examinedCount: 250, redrivenCount: 250, alreadyRedrivenCount: 0, lastAttemptAt: iso(at + 249 * 250) });
    expect(first.continuationToken).not.toBe("");
    // One audit event per transaction: 100, 100, 50.
    const events = await audited(small, hook.id);
    expect(events.map((e) => (e.after as { bulkRedrive: { examinedCount: number; redrivenCount: number } }).bulkRedrive.redrivenCount)).toEqual([100, 100, 50]);
    expect(events[0]!.after).toEqual({
      bulkRedrive: { since: iso(since), until: iso(at), includeParked: true, examinedCount: 100, redrivenCount: 100, madeDueCount: 0, alreadyRedrivenCount: 0, from: iso(since), through: iso(since) },
    });
    expect(events[0]).toMatchObject({ before: null, operationId: OPERATION, actor: { kind: "AUDIT_ACTOR_KIND_USER" } });

    // The token continues after the last one looked at, and the turns after the last one given.
    const rest = done(await bulk(small, hook.id, { ...body, continuationToken: first.continuationToken }));
    expect(rest).toMatchObject({ examinedCount: 50, redrivenCount: 50, alreadyRedrivenCount: 0, lastAttemptAt: iso(at + 299 * 250), continuationToken: "" });
    const redrives = (await executionsOf(small.admin, hook.id)).filter((e) => e.origin === REDRIVE);
    expect(redrives.map((e) => e.redriveOf).sort()).toEqual([...ids].sort());
    const turns = redrives.map((e) => e.nextAttemptAt).filter((t): t is string => t !== null).sort();
    expect(new Set(turns).size).toBe(turns.length);
    expect(turns[turns.length - 1]).toBe(iso(at + 299 * 250));

    // From the start again: all redriven already.
    const again = done(await bulk(small, hook.id, body));
    expect(again).toMatchObject({ examinedCount: 250, redrivenCount: 0, alreadyRedrivenCount: 250, lastAttemptAt: null });
    // A token is bound to its automation and body.
    expectError(await bulk(small, hook.id, { ...body, includeParked: false, continuationToken: first.continuationToken }), 400, "INVALID_PAGE_TOKEN");
    const forged = await bulk(small, hook.id, { ...body, continuationToken: "garbage" });
    expectError(forged, 400, "INVALID_PAGE_TOKEN");
    expect((forged.error as { message: string }).message).toBe("body.continuationToken: malformed, forged or foreign page token");
  });
});

describe("refusals", () => {
  it("a range that is empty, has not ended, or is not RFC 3339 in years 0001 to 9999 is 400 naming the field; nothing is made", async () => {
    const hook = await createHooked(ts, { steps: [failing] });
    const failed = await deliver(hook);
    const t = now();
    const cases: Array<[Body, string, string]> = [
      [{ since: iso(t), until: iso(t) }, "INVALID_ARGUMENT", "body.until: must be later than since"],
      [{ since: iso(t - 1000), until: iso(t + 1000) }, "INVALID_ARGUMENT", "body.until: must not be later than the server's current time"],
      [{ until: iso(t) }, "INVALID_ARGUMENT", "body.since: must have required property 'since'"],
      [{ since: "yesterday", until: iso(t) }, "INVALID_ARGUMENT", 'body.since: must match format "date-time"'],
      [{ since: "9999-12-31T23:00:00-05:00", until: iso(t) }, "INVALID_TIMESTAMP", "body.since: must be in years 0001 to 9999 (UTC)"],
    ];
    for (const [body, reason, message] of cases) {
      const answer = await bulk(ts, hook.id, body);
      expectError(answer, 400, reason);
      expect((answer.error as { message: string }).message).toBe(message);
    }
    const notJson = await ts.admin.POST("/api/v1/automations/{id}/executions/redrive", { params: { path: { id: hook.id } }, body: {} as never, bodySerializer: () => '{"oops' });
    expectError(notJson, 400, "MALFORMED_BODY");
    expect((notJson.error as { message: string }).message).toBe("the request body is not valid JSON");
    expectError(await bulk(ts, hook.id, { since: iso(t - 1000), until: iso(t), force: true } as Body), 400, "INVALID_ARGUMENT");
    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id)).toEqual([failed.id]);
  });

  it("an unknown automation is 404, a draft's 409; only a super admin may call it", async () => {
    const t = now();
    const range = { since: iso(t - 1000), until: iso(t) };
    const unknown = await bulk(ts, "aut_unknown000000", range);
    expectError(unknown, 404, "AUTOMATION_NOT_FOUND");
    const hook = await createHooked(ts, { steps: [failing] });
    const failed = await deliver(hook);
    ts.clock.advance(1000);
    const covering = { since: iso(t - 1000), until: iso(now()) };
    unwrap(await api.update(hook.id, { displayName: "drafted", isDraft: true }, "isDraft"));
    const draft = await bulk(ts, hook.id, covering);
    expectError(draft, 409, "AUTOMATION_IS_DRAFT");
    expect((draft.error as { message: string }).message).toBe("the automation is a draft (not published): publish it to run its steps");
    unwrap(await api.update(hook.id, { displayName: "published", isDraft: false }, "isDraft"));
    const fundAdmin = (await ts.userClient(["ROLE_FUND_ADMIN"], "Fund admin")).client;
    const refused = await fundAdmin.POST("/api/v1/automations/{id}/executions/redrive", { params: { path: { id: hook.id } }, body: covering });
    expectError(refused, 403, "ROLE_NOT_ALLOWED");
    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id)).toEqual([failed.id]);
  });
});

describe("with an Idempotency-Key", () => {
  it("a retry answers the first answer again and does nothing more; the key with another body is 422", async () => {
    const hook = await createHooked(ts, { steps: [failing] });
    const since = now();
    await deliver(hook);
    await deliver(hook);
    ts.clock.advance(1000);
    const body = { since: iso(since), until: iso(now()) };
    const key = newEventId();
    const first = done(await bulk(ts, hook.id, body, key));
    expect(first.redrivenCount).toBe(2);
    ts.clock.advance(1000);
    const retry = await bulk(ts, hook.id, body, key);
    expect(done(retry)).toEqual(first);
    expect(retry.response.headers.get("idempotent-replayed")).toBe("true");
    expect(await executionsOf(ts.admin, hook.id)).toHaveLength(4);
    expectError(await bulk(ts, hook.id, { ...body, includeParked: false }, key), 422, "IDEMPOTENCY_KEY_REUSED");
  });
});
