// Redrive and replay through HTTP: a failed execution run again after its automation was fixed (a new
// execution of the same event with the current steps, linked both ways), a recorded event replayed
// to its automation; what each refuses and why; one redrive per failed execution and one live replay
// per event, also under concurrent requests; Idempotency-Key retries (one after the other and at
// once) answering one execution.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { newExecution } from "../../../src/automations/executions.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage } from "../../../src/storage/connect.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { expectError } from "../limits/helpers.js";
import {
  automationsApi,
  createHooked,
  errorInfo,
  evaluateStep,
  eventsOf,
  executionsOf,
  expectAccepted,
  newEventId,
  sendHmac,
  settled,
  type AutomationsApi,
  type Execution,
  type Hooked,
} from "../webhooks/helpers.js";

const DAY = 24 * 3_600_000;
const ERROR = "AUTOMATION_EXECUTION_STATE_ERROR";
const DONE = "AUTOMATION_EXECUTION_STATE_DONE";
/** A step that fails on the payloads below (no such field), and the step that fixes it. */
const failing = evaluateStep("read", { v: "ctx.trigger.missing.deeper" });
const fixed = evaluateStep("read", { v: "ctx.trigger.present" });
const PAYLOAD = { present: 1, card: "4242" };

let ts: TestServer;
let api: AutomationsApi;

beforeAll(async () => {
  ts = await startTestServer();
  api = automationsApi(ts.admin);
});
afterAll(async () => ts?.stop());

/** Delivers `payload` to the hook and answers the event's id and its execution once run. */
async function deliver(hook: Hooked, payload: unknown = PAYLOAD): Promise<{ eventId: string; execution: Execution }> {
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify(payload)));
  return { eventId: event.eventId, execution: await settled(ts, event.automationExecutionId!) };
}

/** An automation whose step fails, and its failed execution. */
async function failedRun(): Promise<{ hook: Hooked; failed: Execution }> {
  const hook = await createHooked(ts, { steps: [failing] });
  const { execution } = await deliver(hook);
  expect(execution.state).toBe(ERROR);
  return { hook, failed: execution };
}

const setSteps = async (hook: Hooked, steps: unknown[]) => unwrap(await api.update(hook.id, { displayName: hook.automation.displayName, automationSteps: steps }, "automationSteps"));

/** Inserts an execution of the automation's steps, held by another instance for 100 days (running throughout), as `fields` say. */
async function heldElsewhere(hook: Hooked, eventId: string, fields: { origin?: string } = {}): Promise<string> {
  const storage = await openStorage(loadConfig({ DATABASE_URL: ts.databaseUrl }).database);
  try {
    const { steps } = await storage.db.selectFrom("automations").select("steps").where("id", "=", hook.id).executeTakeFirstOrThrow();
    const row = { ...newExecution(hook.id, eventId, { trigger: PAYLOAD }, steps, new Date(ts.clock.now()).toISOString(), new Date(ts.clock.now() + 100 * DAY).toISOString()), ...fields };
    await storage.db.insertInto("automation_executions").values(row).execute();
    return row.id;
  } finally {
    await storage.close();
  }
}

/** Removes an execution as retention would. */
async function pruned(executionId: string): Promise<void> {
  const storage = await openStorage(loadConfig({ DATABASE_URL: ts.databaseUrl }).database);
  try {
    await storage.db.deleteFrom("automation_executions").where("id", "=", executionId).execute();
  } finally {
    await storage.close();
  }
}

/** A second later: executions made after it list before those made at the same instant earlier (newest first). */
const later = () => ts.clock.advance(1000);

const started = (answer: { data?: { automationExecution: Execution }; error?: unknown; response: Response }): Execution => {
  expect(answer.response.status, JSON.stringify(answer.error)).toBe(200);
  return answer.data!.automationExecution;
};

describe("Redrive", () => {
  it("runs a failed execution again with the automation's current steps: a new execution of the same event, linked both ways", async () => {
    const { hook, failed } = await failedRun();
    await setSteps(hook, [fixed]);
    later();
    const redrive = started(await api.redrive(failed.id));
    expect(redrive).toMatchObject({
      automationId: hook.id,
      eventId: failed.eventId,
      context: failed.context,
      origin: "AUTOMATION_EXECUTION_ORIGIN_REDRIVE",
      redriveOf: failed.id,
      redrivenBy: null,
      stepResults: [{ stepName: "read", state: "STEP_STATE_PENDING", output: null, error: null }],
      createdAt: new Date(ts.clock.now()).toISOString(),
      completedAt: null,
    });
    expect(redrive.id).not.toBe(failed.id);
    expect(["AUTOMATION_EXECUTION_STATE_PENDING", "AUTOMATION_EXECUTION_STATE_RUNNING"]).toContain(redrive.state);

    // Run by the worker like any execution, with the fixed step.
    const done = await settled(ts, redrive.id);
    expect(done).toMatchObject({ state: DONE, redriveOf: failed.id, stepResults: [{ stepName: "read", state: "STEP_STATE_DONE", output: { v: 1 }, error: null }] });
    // The failed one is unchanged but for its link to the redrive.
    const before = unwrap(await api.execution(failed.id)).automationExecution;
    expect(before).toEqual({ ...failed, redrivenBy: redrive.id });
    expect(before.origin).toBe("AUTOMATION_EXECUTION_ORIGIN_TRIGGER");
    // Listed with its automation's executions, newest first; the delivery log still names the first.
    expect((await executionsOf(ts.admin, hook.id)).map((e) => [e.id, e.redriveOf, e.redrivenBy])).toEqual([
      [redrive.id, failed.id, null],
      [failed.id, null, redrive.id],
    ]);
    expect((await eventsOf(ts.admin, hook.id)).map((e) => e.automationExecutionId)).toEqual([failed.id]);
  });

  it("a failed execution is redriven once; a redrive that fails is redriven in turn", async () => {
    const { hook, failed } = await failedRun();
    later();
    const first = started(await api.redrive(failed.id));
    const again = await api.redrive(failed.id);
    expectError(again, 409, "EXECUTION_ALREADY_REDRIVEN");
    expect(errorInfo(again.error).metadata).toEqual({ redrivenBy: first.id });

    // Still the failing step: the redrive fails too, and may be redriven itself.
    expect((await settled(ts, first.id)).state).toBe(ERROR);
    await setSteps(hook, [fixed]);
    later();
    const second = started(await api.redrive(first.id));
    expect(second).toMatchObject({ redriveOf: first.id, eventId: failed.eventId, context: failed.context });
    expect((await settled(ts, second.id)).state).toBe(DONE);
    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id)).toEqual([second.id, first.id, failed.id]);
  });

  it("refuses an execution that did not fail (done, or running elsewhere), an unknown one, a draft's and a deleted automation's; nothing is made", async () => {
    const hook = await createHooked(ts, { steps: [fixed] });
    const { execution: done } = await deliver(hook);
    expect(done.state).toBe(DONE);
    const notFailed = await api.redrive(done.id);
    expectError(notFailed, 409, "EXECUTION_NOT_FAILED");
    expect(errorInfo(notFailed.error).metadata).toEqual({ state: DONE });

    const running = await heldElsewhere(hook, newEventId());
    const stillRunning = await api.redrive(running);
    expectError(stillRunning, 409, "EXECUTION_NOT_FAILED");
    expect(errorInfo(stillRunning.error).metadata).toEqual({ state: "AUTOMATION_EXECUTION_STATE_RUNNING" });

    const unknown = await api.redrive("exe_unknown0000000");
    expectError(unknown, 404, "EXECUTION_NOT_FOUND");
    expect(errorInfo(unknown.error).metadata).toEqual({ executionId: "exe_unknown0000000" });

    const { hook: drafted, failed } = await failedRun();
    unwrap(await api.update(drafted.id, { displayName: "drafted", isDraft: true }, "isDraft"));
    const draft = await api.redrive(failed.id);
    expectError(draft, 409, "AUTOMATION_IS_DRAFT");
    expect(errorInfo(draft.error).metadata).toEqual({ automationId: drafted.id });
    // The trigger toggle turns the trigger off, not the operator's requests.
    unwrap(await api.update(drafted.id, { displayName: "drafted", isDraft: false, enabled: false }, "isDraft,enabled"));
    expect(started(await api.redrive(failed.id)).redriveOf).toBe(failed.id);

    const { hook: deleted, failed: orphan } = await failedRun();
    unwrap(await api.delete(deleted.id));
    const gone = await api.redrive(orphan.id);
    expectError(gone, 404, "AUTOMATION_NOT_FOUND");
    expect(errorInfo(gone.error).metadata).toEqual({ automationId: deleted.id });

    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id).sort()).toEqual([done.id, running].sort());
    expect((await executionsOf(ts.admin, deleted.id)).map((e) => e.id)).toEqual([orphan.id]);
  });

  it("a storm of redrives of one failed execution, each with its own key, makes one execution", async () => {
    const { hook, failed } = await failedRun();
    const answers = await Promise.all(Array.from({ length: 6 }, () => api.redrive(failed.id, newEventId())));
    const made = answers.filter((a) => a.response.status === 200).map((a) => a.data!.automationExecution.id);
    expect(made).toHaveLength(1);
    for (const refused of answers.filter((a) => a.response.status !== 200)) expectError(refused, 409, "EXECUTION_ALREADY_REDRIVEN");
    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id).sort()).toEqual([failed.id, made[0]!].sort());
  });
});

describe("Redrive and Replay with an Idempotency-Key", () => {
  it("a retry answers the first answer again and makes no second execution", async () => {
    const { hook, failed } = await failedRun();
    const key = newEventId();
    const first = started(await api.redrive(failed.id, key));
    const retry = await api.redrive(failed.id, key);
    expect(started(retry)).toEqual(first);
    expect(retry.response.headers.get("idempotent-replayed")).toBe("true");

    const replayKey = newEventId();
    const replay = started(await api.replay(hook.id, failed.eventId!, replayKey));
    await settled(ts, replay.id);
    const replayRetry = await api.replay(hook.id, failed.eventId!, replayKey);
    expect(started(replayRetry)).toEqual(replay);
    expect(replayRetry.response.headers.get("idempotent-replayed")).toBe("true");
    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id).sort()).toEqual([failed.id, first.id, replay.id].sort());

    // The key with another request is refused.
    const { failed: other } = await failedRun();
    expectError(await api.redrive(other.id, key), 422, "IDEMPOTENCY_KEY_REUSED");
    expectError(await api.replay(hook.id, failed.eventId!, key), 422, "IDEMPOTENCY_KEY_REUSED");
  });

  it("two requests with one key at once make one execution: the other is answered it, or told the key is in use", async () => {
    for (const operation of ["redrive", "replay"] as const) {
      const { hook, failed } = await failedRun();
      const key = newEventId();
      const call = () => (operation === "redrive" ? api.redrive(failed.id, key) : api.replay(hook.id, failed.eventId!, key));
      const answers = await Promise.all([call(), call()]);
      const ok = answers.filter((a) => a.response.status === 200).map((a) => a.data!.automationExecution);
      expect(ok.length, operation).toBeGreaterThanOrEqual(1);
      for (const refused of answers.filter((a) => a.response.status !== 200)) expectError(refused, 409, "IDEMPOTENCY_KEY_IN_USE");
      for (const same of ok) expect(same).toEqual(ok[0]);
      // Once the first answered, a retry is answered it.
      expect(started(await call())).toEqual(ok[0]);
      expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id).sort()).toEqual([failed.id, ok[0]!.id].sort());
    }
  });
});

describe("Replay", () => {
  it("runs a recorded event again with the automation's current steps, over the body its execution kept", async () => {
    const hook = await createHooked(ts, { steps: [fixed] });
    const { eventId, execution: first } = await deliver(hook);
    expect(first.state).toBe(DONE);
    later();
    await setSteps(hook, [evaluateStep("read", { v: 'ctx.trigger.card + "!"' })]);

    const replay = started(await api.replay(hook.id, eventId));
    expect(replay).toMatchObject({
      automationId: hook.id,
      eventId,
      context: { trigger: PAYLOAD },
      origin: "AUTOMATION_EXECUTION_ORIGIN_REPLAY",
      redriveOf: null,
      redrivenBy: null,
      completedAt: null,
    });
    expect(await settled(ts, replay.id)).toMatchObject({ state: DONE, stepResults: [{ stepName: "read", state: "STEP_STATE_DONE", output: { v: "4242!" }, error: null }] });
    // Once it finished, the event may be replayed again, its id in any case.
    later();
    const again = started(await api.replay(hook.id, eventId.toUpperCase()));
    expect(again).toMatchObject({ eventId, origin: "AUTOMATION_EXECUTION_ORIGIN_REPLAY" });
    await settled(ts, again.id);
    // The delivery log is unchanged: one event, its first execution.
    expect((await eventsOf(ts.admin, hook.id)).map((e) => [e.eventId, e.automationExecutionId])).toEqual([[eventId, first.id]]);
    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id)).toEqual([again.id, replay.id, first.id]);
  });

  it("one replay of an event at a time: while one is pending or running, another is refused, naming it", async () => {
    const hook = await createHooked(ts, { steps: [fixed] });
    const { eventId } = await deliver(hook);
    const live = await heldElsewhere(hook, eventId, { origin: "AUTOMATION_EXECUTION_ORIGIN_REPLAY" });
    const refused = await api.replay(hook.id, eventId);
    expectError(refused, 409, "REPLAY_IN_PROGRESS");
    expect(errorInfo(refused.error).metadata).toEqual({ automationExecutionId: live });
    // A redrive or the event's own execution running does not count: only replays.
    const other = await deliver(hook);
    await heldElsewhere(hook, other.eventId);
    expect(started(await api.replay(hook.id, other.eventId)).origin).toBe("AUTOMATION_EXECUTION_ORIGIN_REPLAY");
  });

  it("refuses an event whose body is not kept (not run, or its execution gone), an unknown event or automation, another automation's event, a draft's", async () => {
    const hook = await createHooked(ts, { steps: [fixed], isDraft: true });
    const notRun = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify(PAYLOAD)));
    expect(notRun.outcome).toBe("WEBHOOK_EVENT_OUTCOME_NOT_RUN_DRAFT");
    unwrap(await api.update(hook.id, { displayName: "published", isDraft: false }, "isDraft"));
    const notKept = await api.replay(hook.id, notRun.eventId);
    expectError(notKept, 409, "EVENT_BODY_NOT_KEPT");
    expect(errorInfo(notKept.error).metadata).toEqual({ eventId: notRun.eventId });

    const { eventId, execution } = await deliver(hook);
    await pruned(execution.id);
    expectError(await api.replay(hook.id, eventId), 409, "EVENT_BODY_NOT_KEPT");

    const unknownEvent = await api.replay(hook.id, newEventId());
    expectError(unknownEvent, 404, "WEBHOOK_EVENT_NOT_FOUND");
    expectError(await api.replay("aut_unknown000000", eventId), 404, "AUTOMATION_NOT_FOUND");
    const elsewhere = await createHooked(ts, { steps: [fixed] });
    const { eventId: othersEvent } = await deliver(elsewhere);
    expectError(await api.replay(hook.id, othersEvent), 404, "WEBHOOK_EVENT_NOT_FOUND");

    unwrap(await api.update(elsewhere.id, { displayName: "drafted", isDraft: true }, "isDraft"));
    const draft = await api.replay(elsewhere.id, othersEvent);
    expectError(draft, 409, "AUTOMATION_IS_DRAFT");
    expect(errorInfo(draft.error).metadata).toEqual({ automationId: elsewhere.id });
    expect(await executionsOf(ts.admin, hook.id)).toHaveLength(0);
    expect(await executionsOf(ts.admin, elsewhere.id)).toHaveLength(1);
  });

  it("an event past its 7-day retention in the delivery log is no longer found, though its execution is kept", async () => {
    const hook = await createHooked(ts, { steps: [fixed] });
    const { eventId, execution } = await deliver(hook);
    ts.clock.advance(7 * DAY);
    expectError(await api.replay(hook.id, eventId), 404, "WEBHOOK_EVENT_NOT_FOUND");
    expect(unwrap(await api.execution(execution.id)).automationExecution.id).toBe(execution.id);
  });
});

describe("bodies", () => {
  it("each takes an empty object: a body that is not JSON, or has a field, is 400 as the contract shows, and nothing is made", async () => {
    const { hook, failed } = await failedRun();
    const redrive = { params: { path: { id: failed.id } } };
    const replay = { params: { path: { id: hook.id, event_id: failed.eventId! } } };
    const notJson = { body: {}, bodySerializer: () => '{"oops' };
    for (const answer of [
      await ts.admin.POST("/api/v1/automation_executions/{id}/redrive", { ...redrive, ...notJson }),
      await ts.admin.POST("/api/v1/automations/{id}/webhook-events/{event_id}/replay", { ...replay, ...notJson }),
    ]) {
      expectError(answer, 400, "MALFORMED_BODY");
      expect((answer.error as { message: string }).message).toBe("the request body is not valid JSON");
    }
    for (const answer of [
      await ts.admin.POST("/api/v1/automation_executions/{id}/redrive", { ...redrive, body: { force: true } as never }),
      await ts.admin.POST("/api/v1/automations/{id}/webhook-events/{event_id}/replay", { ...replay, body: { force: true } as never }),
    ]) {
      expectError(answer, 400, "INVALID_ARGUMENT");
      expect((answer.error as { message: string }).message).toBe("body: must NOT have more than 0 properties");
    }
    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id)).toEqual([failed.id]);
  });
});

describe("who may", () => {
  it("only a super admin redrives and replays: a fund admin is refused 403, and nothing is made", async () => {
    const { hook, failed } = await failedRun();
    const fundAdmin = automationsApi((await ts.userClient(["ROLE_FUND_ADMIN"], "Fund admin")).client);
    expectError(await fundAdmin.redrive(failed.id, newEventId()), 403, "ROLE_NOT_ALLOWED");
    expectError(await fundAdmin.replay(hook.id, failed.eventId!), 403, "ROLE_NOT_ALLOWED");
    expect((await executionsOf(ts.admin, hook.id)).map((e) => e.id)).toEqual([failed.id]);
  });
});
