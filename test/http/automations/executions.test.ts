// Executions through HTTP: CEL over ctx.trigger and ctx.steps, skipIfTrueCel, the limit steps acting
// through the funds rules (visible through the funds API), a failing step stopping the execution,
// hostile payloads that cannot hang or crash the server, and executions listed, filtered, paged and
// fetched, with the delivery log and lastExecutedAt.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { amount, expectError, funds, newAppId, shown, type Funds } from "../limits/helpers.js";
import {
  automationsApi,
  createHooked,
  evaluateStep,
  eventsOf,
  executionsOf,
  expectAccepted,
  expectRefused,
  newEventId,
  sendHmac,
  settled,
  type AutomationsApi,
  type Execution,
  type Hooked,
  type Step,
} from "../webhooks/helpers.js";

const DAY = 24 * 3_600_000;

let ts: TestServer;
let api: AutomationsApi;
let f: Funds;
let subject: string;

beforeAll(async () => {
  ts = await startTestServer();
  api = automationsApi(ts.admin);
  f = funds(ts.admin);
  subject = (await ts.userClient(["ROLE_USER"], "Subject")).userId;
});
afterAll(async () => ts?.stop());

/** Delivers `payload` to the hook and answers its execution once the worker is idle. */
async function run(hook: Hooked, payload: unknown): Promise<Execution> {
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify(payload)));
  expect(event.automationExecutionId).toBeTruthy();
  return settled(ts, event.automationExecutionId!);
}

const iso = (ms: number) => new Date(ms).toISOString();
const row = async (userId: string, appId: string) => unwrap(await f.get(userId, appId)).limit;

const suspendStep: Step = {
  stepName: "suspend",
  suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: 'ctx.trigger["appId"]', reasonCel: '"Card reported lost: " + ctx.trigger.card' },
};

describe("CEL over the context", () => {
  it("reads ctx.trigger.x and ctx.trigger[\"x\"], earlier steps' outputs, and skips a step whose skipIfTrueCel is true", async () => {
    const hook = await createHooked(ts, {
      steps: [
        evaluateStep("read", {
          dot: "ctx.trigger.x",
          bracket: 'ctx.trigger["x"]',
          spaced: 'ctx.trigger["key with space"]',
          nested: "ctx.trigger.nested.y",
          count: "size(ctx.trigger.list)",
          isLost: 'ctx.trigger.event == "card.lost"',
        }),
        evaluateStep("use", { shout: 'ctx.steps.read.dot + "!"', same: "ctx.steps.read.dot == ctx.steps.read.bracket", viaBracket: 'ctx.steps["read"].spaced' }),
        evaluateStep("skipped", { never: '"ran"' }, "ctx.steps.read.isLost"),
        evaluateStep("notSkipped", { ran: '"yes"' }, "!ctx.steps.read.isLost"),
        evaluateStep("after", { sawSkipped: "has(ctx.steps.skipped)", sawUse: "has(ctx.steps.use)" }),
      ],
    });
    const payload = { x: "hello", "key with space": "spaced", nested: { y: true }, list: [1, 2, 3], event: "card.lost" };
    const execution = await run(hook, payload);
    expect(execution).toMatchObject({ automationId: hook.id, state: "AUTOMATION_EXECUTION_STATE_DONE", context: { trigger: payload } });
    expect(execution.completedAt).not.toBeNull();
    expect(execution.stepResults).toEqual([
      { stepName: "read", state: "STEP_STATE_DONE", output: { dot: "hello", bracket: "hello", spaced: "spaced", nested: true, count: 3, isLost: true }, error: null },
      { stepName: "use", state: "STEP_STATE_DONE", output: { shout: "hello!", same: true, viaBracket: "spaced" }, error: null },
      { stepName: "skipped", state: "STEP_STATE_SKIPPED", output: null, error: null },
      { stepName: "notSkipped", state: "STEP_STATE_DONE", output: { ran: "yes" }, error: null },
      { stepName: "after", state: "STEP_STATE_DONE", output: { sawSkipped: false, sawUse: true }, error: null },
    ]);

    // Another payload takes the other branch.
    const other = await run(hook, { ...payload, event: "card.found" });
    expect(other.stepResults.map((s) => s.state)).toEqual(["STEP_STATE_DONE", "STEP_STATE_DONE", "STEP_STATE_DONE", "STEP_STATE_SKIPPED", "STEP_STATE_DONE"]);
    expect(other.stepResults[2]?.output).toEqual({ never: "ran" });
  });

  it("a runtime error (a missing field, a wrong skip type) fails the step with a message; later steps stay PENDING", async () => {
    const hook = await createHooked(ts, {
      steps: [evaluateStep("first", { v: "ctx.trigger.missing.deeper" }), evaluateStep("second", { v: "1" })],
    });
    const execution = await run(hook, { present: 1 });
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(execution.completedAt).not.toBeNull();
    expect(execution.stepResults[0]).toMatchObject({ stepName: "first", state: "STEP_STATE_ERROR", output: null });
    expect(execution.stepResults[0]?.error).toEqual(expect.stringMatching(/missing/));
    expect(execution.stepResults[1]).toEqual({ stepName: "second", state: "STEP_STATE_PENDING", output: null, error: null });

    const skipType = await createHooked(ts, { steps: [evaluateStep("s", { v: "1" }, "ctx.trigger.flag")] });
    const failed = await run(skipType, { flag: "not a bool" });
    expect(failed.stepResults[0]).toMatchObject({ state: "STEP_STATE_ERROR", error: expect.stringMatching(/bool/) });
  });
});

describe("limit steps act through the funds rules", () => {
  it("suspendAppLimit suspends the subject's app limit, visible through the funds API; the limit underneath is preserved", async () => {
    const appId = newAppId("app-salesforce");
    unwrap(await f.setLimit(subject, appId, { limit: amount("250"), period: "PERIOD_KIND_MONTHLY" }));
    const hook = await createHooked(ts, { steps: [suspendStep, evaluateStep("check", { reason: "ctx.steps.suspend.limit.controls.suspension.reason" })] });
    const execution = await run(hook, { userId: subject, appId, card: "4242" });
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");

    const limit = await row(subject, appId);
    expect(limit.controls).toEqual(
      shown({ limit: amount("250"), period: "PERIOD_KIND_MONTHLY", suspension: { reason: "Card reported lost: 4242", suspendedAt: iso(ts.clock.now()) } }),
    );
    // The step's output is the row as the API shows it.
    expect(execution.stepResults[0]?.output).toEqual({ limit });
    expect(execution.stepResults[1]?.output).toEqual({ reason: "Card reported lost: 4242" });
    const effective = unwrap(await f.effective(subject, appId)).effective;
    expect(effective).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", cause: "CAUSE_SUSPENSION" });

    // unsuspendAppLimit restores the preserved limit.
    const lift = await createHooked(ts, { steps: [{ stepName: "lift", unsuspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId" } }] });
    const lifted = await run(lift, { userId: subject, appId });
    expect(lifted.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    const after = await row(subject, appId);
    expect(after.controls).toEqual(shown({ limit: amount("250"), period: "PERIOD_KIND_MONTHLY" }));
    expect(lifted.stepResults[0]?.output).toEqual({ limit: after });
    expect(unwrap(await f.effective(subject, appId)).effective).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", limit: amount("250") });
  });

  it("a reason a step computes obeys the API's text rule: a NUL or an unpaired surrogate fails the step and stores nothing", async () => {
    const appId = newAppId();
    const hook = await createHooked(ts, { steps: [{ stepName: "suspend", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId", reasonCel: "ctx.trigger.reason" } }] });
    for (const reason of ["a\u0000b", "lone \ud800 surrogate"]) {
      const execution = await run(hook, { userId: subject, appId, reason });
      expect(execution.stepResults[0]).toMatchObject({ state: "STEP_STATE_ERROR", error: expect.stringMatching(/^suspendAppLimit\.reasonCel: must not contain control characters .* or unpaired surrogates$/) });
    }
    expectError(await f.get(subject, appId), 404, "ROW_NOT_FOUND");
    // Length is counted in characters, as the contract's maxLength: 500 emoji are a reason, 501 are not.
    expect((await run(hook, { userId: subject, appId, reason: "😀".repeat(500) })).state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect((await run(hook, { userId: subject, appId, reason: "😀".repeat(501) })).stepResults[0]).toMatchObject({ state: "STEP_STATE_ERROR", error: expect.stringMatching(/at most 500/) });
    // The API counts the same way: its 500 emoji were refused by the domain after the contract took them.
    expect(unwrap(await f.suspend(subject, newAppId(), { reason: "😀".repeat(500) })).limit?.controls?.suspension?.reason).toBe("😀".repeat(500));
  });

  it("suspending a row that does not exist creates it, as the API does; unsuspending its only control removes it (output limit null)", async () => {
    const appId = newAppId();
    const hook = await createHooked(ts, { steps: [suspendStep] });
    expect((await run(hook, { userId: subject, appId, card: "1" })).state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect((await row(subject, appId)).controls).toEqual(shown({ suspension: { reason: "Card reported lost: 1", suspendedAt: iso(ts.clock.now()) } }));
    const lift = await createHooked(ts, { steps: [{ stepName: "lift", unsuspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId" } }] });
    const lifted = await run(lift, { userId: subject, appId });
    expect(lifted.stepResults[0]).toMatchObject({ state: "STEP_STATE_DONE", output: { limit: null } });
    expectError(await f.get(subject, appId), 404, "ROW_NOT_FOUND");
    // Unsuspending a row that does not exist is the API's 404, so the step fails.
    const again = await run(lift, { userId: subject, appId });
    expect(again.stepResults[0]).toMatchObject({ state: "STEP_STATE_ERROR", error: expect.stringMatching(/no limit row/) });
  });

  it("setAppLimitExtension grants the extension; an expiry in the past is refused as by the API (step ERROR)", async () => {
    const appId = newAppId();
    unwrap(await f.setLimit(subject, appId, { limit: amount("100") }));
    const extend: Step = {
      stepName: "extend",
      setAppLimitExtension: {
        userIdCel: "ctx.trigger.userId",
        appIdCel: "ctx.trigger.appId",
        limit: amount("500"),
        expiresAtCel: "timestamp(ctx.trigger.until)",
        reasonCel: "ctx.trigger.why",
      },
    };
    const hook = await createHooked(ts, { steps: [extend, evaluateStep("after", { ok: "true" })] });
    const until = iso(ts.clock.now() + DAY);
    const execution = await run(hook, { userId: subject, appId, until, why: "Quarter-end travel" });
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    const limit = await row(subject, appId);
    expect(limit.controls).toEqual(shown({ limit: amount("100"), extension: { limit: amount("500"), expiresAt: until, reason: "Quarter-end travel" } }));
    expect(execution.stepResults[0]?.output).toEqual({ limit });

    const past = await run(hook, { userId: subject, appId, until: iso(ts.clock.now() - 1000), why: "late" });
    expect(past.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(past.stepResults[0]).toMatchObject({ state: "STEP_STATE_ERROR", output: null, error: expect.stringMatching(/future/) });
    expect(past.stepResults[1]).toMatchObject({ state: "STEP_STATE_PENDING", output: null, error: null });
    // The row is as it was.
    expect((await row(subject, appId)).controls).toEqual(limit.controls);
  });

  it("an invalid target (unknown user, malformed app id, a reason too long, a non-string id) fails the step with a message; the execution is ERROR; later steps stay PENDING", async () => {
    const hook = await createHooked(ts, { steps: [suspendStep, evaluateStep("after", { ok: "true" })] });
    const cases: [unknown, RegExp][] = [
      [{ userId: "no-such-user", appId: newAppId(), card: "1" }, /no user/],
      [{ userId: 12345, appId: newAppId(), card: "1" }, /string/],
      [{ userId: subject, appId: "not a valid app id!", card: "1" }, /app/i],
      [{ userId: subject, appId: "", card: "1" }, /app/i],
      [{ userId: subject, appId: `a${"x".repeat(200)}`, card: "1" }, /app/i],
      [{ userId: subject, appId: newAppId(), card: "x".repeat(600) }, /reason/],
    ];
    for (const [payload, message] of cases) {
      const execution = await run(hook, payload);
      expect(execution.state, JSON.stringify(payload).slice(0, 80)).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
      expect(execution.completedAt).not.toBeNull();
      expect(execution.stepResults[0]).toMatchObject({ stepName: "suspend", state: "STEP_STATE_ERROR", output: null });
      expect(execution.stepResults[0]?.error).toMatch(message);
      expect(execution.stepResults[1]).toEqual({ stepName: "after", state: "STEP_STATE_PENDING", output: null, error: null });
    }
    // Nothing was created by the refused steps: every suspended row of the subject is addressable by the API.
    const suspended = unwrap(await f.search({ userIds: [subject], suspended: true, pageSize: 100 })).list.map((i) => i.limit.appId);
    for (const appId of suspended) expect(appId).toMatch(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/);
  });
});

describe("hostile payloads cannot hang or crash the server", () => {
  it("JSON nested deeper than the limit is 400 (and does not consume the id); 128 levels within 64 KB run", async () => {
    const hook = await createHooked(ts, { steps: [evaluateStep("whole", { copy: "ctx.trigger" }), evaluateStep("after", { ok: "true" })] });
    const pad = "x".repeat(60_000);
    const deep = (depth: number) => `${"[".repeat(depth - 1)}{"s":"${pad}"}${"]".repeat(depth - 1)}`;
    const eventId = newEventId();
    expectRefused(await sendHmac(ts, hook.url, hook.secret, deep(129), { eventId }), 400, "MALFORMED_BODY");
    expectRefused(await sendHmac(ts, hook.url, hook.secret, "[".repeat(30_000) + "]".repeat(30_000), { eventId }), 400, "MALFORMED_BODY");
    const started = Date.now();
    const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, deep(128), { eventId }));
    const execution = await settled(ts, event.automationExecutionId!);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(execution.state, JSON.stringify(execution.stepResults).slice(0, 300)).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(JSON.stringify(execution.stepResults[0]?.output)).toBe(`{"copy":${deep(128)}}`);
    expect((await fetch(`${ts.url}/healthz`)).status).toBe(200);
  });

  it("a huge comprehension over a 64 KB payload exceeds its budget: the step errors quickly, the server keeps answering", async () => {
    const hook = await createHooked(ts, {
      steps: [
        evaluateStep("cube", { n: "ctx.trigger.map(a, ctx.trigger.map(b, ctx.trigger.map(c, a + b + c))).size()" }),
        evaluateStep("after", { ok: "true" }),
      ],
    });
    const wide = JSON.stringify(Array.from({ length: 30_000 }, () => 1));
    expect(wide.length).toBeLessThanOrEqual(65_536);
    const started = Date.now();
    const execution = await run(hook, JSON.parse(wide));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    // The time budget, or the size bound (five inner lists of 30,000 numbers pass 256 KB as JSON), whichever comes first.
    expect(execution.stepResults[0]).toMatchObject({ state: "STEP_STATE_ERROR", output: null, error: expect.stringMatching(/budget|larger than 262144 bytes as JSON/) });
    expect(execution.stepResults[1]?.state).toBe("STEP_STATE_PENDING");

    const strings = await createHooked(ts, { steps: [evaluateStep("blowup", { s: 'ctx.trigger.map(a, ctx.trigger.map(b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")).size()' })] });
    const blown = await run(strings, JSON.parse(wide));
    // Each inner list is 1.5 MB as JSON: the size bound refuses the first one as it grows.
    expect(blown.stepResults[0]).toMatchObject({ state: "STEP_STATE_ERROR", error: expect.stringMatching(/larger than 262144 bytes as JSON/) });

    // The server still answers, and still runs automations.
    expect((await fetch(`${ts.url}/healthz`)).status).toBe(200);
    const fine = await createHooked(ts, { steps: [evaluateStep("s", { ok: "size(ctx.trigger) == 3" })] });
    expect((await run(fine, [1, 2, 3])).stepResults[0]).toMatchObject({ state: "STEP_STATE_DONE", output: { ok: true } });
  });
});

describe("executions and the delivery log", () => {
  it("are listed newest first, filtered by automation_id, paged, fetched one by one; lastExecutedAt is set", async () => {
    const hook = await createHooked(ts, { steps: [evaluateStep("n", { n: "ctx.trigger.n" })] });
    expect(hook.automation.lastExecutedAt).toBeNull();
    const other = await createHooked(ts, { steps: [evaluateStep("n", { n: "ctx.trigger.n" })] });
    expectAccepted(await sendHmac(ts, other.url, other.secret, '{"n":-1}'));

    const accepted = [];
    for (let n = 0; n < 12; n++) {
      ts.clock.advance(1000);
      accepted.push(expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ n }))));
    }
    await ts.server.worker.idle();
    const newestFirst = accepted.map((e) => e.automationExecutionId).reverse();

    const first = unwrap(await api.executions({ automation_id: hook.id, page_size: 10 }));
    expect(first.list).toHaveLength(10);
    expect(first.nextPageToken).not.toBe("");
    const second = unwrap(await api.executions({ automation_id: hook.id, page_size: 10, page_token: first.nextPageToken }));
    expect(second.list).toHaveLength(2);
    expect(second.nextPageToken).toBe("");
    const listed = [...first.list, ...second.list].map((i) => i.automationExecution);
    expect(listed.map((e) => e.id)).toEqual(newestFirst);
    expect(listed.every((e) => e.automationId === hook.id && e.state === "AUTOMATION_EXECUTION_STATE_DONE")).toBe(true);
    expect(listed.map((e) => e.stepResults[0]?.output)).toEqual(Array.from({ length: 12 }, (_, i) => ({ n: 11 - i })));
    // A token belongs to its filter.
    expectError(await api.executions({ automation_id: other.id, page_token: first.nextPageToken }), 400);

    for (const e of listed.slice(0, 3)) expect(unwrap(await api.execution(e.id)).automationExecution).toEqual(e);
    expect(unwrap(await api.executions({ automation_id: "aut_noSuchAutomation" }))).toEqual({ list: [], nextPageToken: "" });
    const everything = (await executionsOf(ts.admin, hook.id)).length;
    expect(everything).toBe(12);
    const all = unwrap(await api.executions({ page_size: 100 })).list.map((i) => i.automationExecution.automationId);
    expect(all).toContain(other.id);
    expect(all).toContain(hook.id);

    const log = await eventsOf(ts.admin, hook.id);
    expect(log.map((e) => e.automationExecutionId)).toEqual(newestFirst);
    expect(log.every((e) => e.outcome === "WEBHOOK_EVENT_OUTCOME_EXECUTED" && e.notRunReason === null)).toBe(true);
    const firstLogPage = unwrap(await api.events(hook.id, { page_size: 10 }));
    expect(firstLogPage.list).toHaveLength(10);
    expect(firstLogPage.nextPageToken).not.toBe("");

    const automation = unwrap(await api.get(hook.id)).automation;
    expect(automation.lastExecutedAt).toBe(accepted.at(-1)?.receivedAt);
    expect(automation.lastExecutedAt).toBe(iso(ts.clock.now()));
  });
});
