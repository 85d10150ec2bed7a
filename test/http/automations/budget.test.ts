// The resource budget of automations through HTTP (issue 14, finding 1): one signed 64 KB webhook
// whose step maps a 16,000-item list to a 32,000-character string used to build a 512 MB output,
// exhaust the server's memory and leave ListAutomationExecutions answering 500. Every value a step
// builds, each step's output and each execution's outputs together are bounded as JSON while they
// are built; an execution over a bound ends in ERROR naming the step and the bound;
// CheckAutomationSteps applies the same bounds; executions stored before the bounds are answered
// without their step results. The finding itself also runs against a server process with a 192 MB
// heap, which the unbounded build cannot survive.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient, unwrap } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage } from "../../../src/storage/connect.js";
import { createTestDatabase, type TestDatabase } from "../../support/database.js";
import { freePort, serve, type Served } from "../../support/process.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";
import {
  automationsApi,
  createHooked,
  evaluateStep,
  expectAccepted,
  hmacHeaders,
  postRaw,
  sendHmac,
  settled,
  type AutomationsApi,
  type Execution,
  type Hooked,
  type Step,
} from "../webhooks/helpers.js";
import { webhookTrigger } from "../../support/triggers.js";

const root = fileURLToPath(new URL("../../..", import.meta.url));

const VALUE_BOUND = 262_144;
const STEP_BOUND = 262_144;
const EXECUTION_BOUND = 1_048_576;

/** The finding's payload: a 32,000-character string and a list of 16,000 zeros, 64 KB as JSON. */
const FINDING_PAYLOAD = JSON.stringify({ s: "x".repeat(32_000), list: Array.from({ length: 16_000 }, () => 0) });
const FINDING_STEP = "ctx.trigger.list.map(x, ctx.trigger.s)";

const valueError = (step: number, expression = 0) =>
  `automationSteps[${step}].evaluateExpressions.expressions[${expression}].expression: builds a value larger than ${VALUE_BOUND} bytes as JSON (the bound on every value an expression builds)`;
const stepError = (name: string) => `step "${name}": output larger than ${STEP_BOUND} bytes as JSON (the bound on a step's output)`;
const executionError = (name: string) =>
  `step "${name}": the outputs of the execution's steps would be larger than ${EXECUTION_BOUND} bytes as JSON together (the bound on an execution's outputs)`;

/** `ctx.trigger.s` of the payloads that build long strings. */
const S = "x".repeat(30_000);

/**
 * An expression making a string of `chars` characters (at least 30,000) from a payload within 64 KB:
 * `ctx.trigger.s` doubled (each doubling costs its size, so a chain of `+` would run out of cost)
 * and then `ctx.trigger.t` appended, whose text it answers.
 */
function stringOf(chars: number): { expression: string; t: string } {
  let doubled = S.length;
  const binds: string[] = ["cel.bind(s0, ctx.trigger.s, "];
  while (doubled * 2 <= chars) {
    binds.push(`cel.bind(s${binds.length}, s${binds.length - 1} + s${binds.length - 1}, `);
    doubled *= 2;
  }
  const expression = `${binds.join("")}s${binds.length - 1} + ctx.trigger.t${")".repeat(binds.length)}`;
  return { expression, t: "y".repeat(chars - doubled) };
}

let dir: string;
let database: TestDatabase;
let ts: TestServer;
let api: AutomationsApi;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-budget-"));
  database = await createTestDatabase(dir);
  ts = await startTestServer({ DATABASE_URL: database.url, SECRETS_KEY_FILE: join(dir, "secrets.key") });
  api = automationsApi(ts.admin);
});
afterAll(async () => {
  await ts?.stop();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function run(hook: Hooked, payload: string): Promise<Execution> {
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, payload));
  return settled(ts, event.automationExecutionId!);
}

describe("the finding: a 64 KB webhook mapping a list to a long string", () => {
  it("ends in ERROR naming the step and the bound, quickly; the server keeps answering and lists the execution", async () => {
    expect(Buffer.byteLength(FINDING_PAYLOAD)).toBeLessThanOrEqual(65_536);
    const hook = await createHooked(ts, { steps: [evaluateStep("amplify", { out: FINDING_STEP }), evaluateStep("after", { ok: "true" })] });
    const started = Date.now();
    const execution = await run(hook, FINDING_PAYLOAD);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(execution.stepResults).toEqual([
      { stepName: "amplify", state: "STEP_STATE_ERROR", output: null, error: valueError(0) },
      { stepName: "after", state: "STEP_STATE_PENDING", output: null, error: null },
    ]);
    const health = Date.now();
    expect((await fetch(`${ts.url}/healthz`)).status).toBe(200);
    expect(Date.now() - health).toBeLessThan(1_000);
    const listed = unwrap(await api.executions({ automation_id: hook.id })).list.map((i) => i.automationExecution);
    expect(listed).toEqual([execution]);
  });

  it("CheckAutomationSteps answers the same error for it", async () => {
    const report = unwrap(await api.check({ automationSteps: [evaluateStep("amplify", { out: FINDING_STEP })], samplePayload: JSON.parse(FINDING_PAYLOAD) }));
    expect(report.evaluations).toEqual([{ path: "automationSteps[0].evaluateExpressions.expressions[0].expression", value: null, error: valueError(0) }]);
  });
});

describe("every value a step builds is bounded as it is built", () => {
  const payload = { s: S, list: Array.from({ length: 2_000 }, (_, i) => i), words: Array.from({ length: 200 }, (_, i) => `${i}`.padEnd(50, "w")) };
  const built: [string, string][] = [
    ["string + in a comprehension", "ctx.trigger.list.map(x, ctx.trigger.s + 'a')"],
    ["strings doubled", "cel.bind(a, ctx.trigger.s + ctx.trigger.s, cel.bind(b, a + a, cel.bind(c, b + b, cel.bind(d, c + c, size(d)))))"],
    ["lists doubled", "cel.bind(a, ctx.trigger.list + ctx.trigger.list, cel.bind(b, a + a, cel.bind(c, b + b, cel.bind(d, c + c, cel.bind(e, d + d, size(e))))))"],
    ["a list literal of the payload", "size([ctx.trigger, ctx.trigger, ctx.trigger, ctx.trigger, ctx.trigger, ctx.trigger])"],
    ["a map literal of the payload", "size({'a': ctx.trigger, 'b': ctx.trigger, 'c': ctx.trigger, 'd': ctx.trigger, 'e': ctx.trigger, 'f': ctx.trigger})"],
    ["nested map()", "ctx.trigger.words.map(w, ctx.trigger.words.map(v, w))"],
    ["join() with a long separator", "size(ctx.trigger.words.join(ctx.trigger.s))"],
    ["split() of a long string", "size(cel.bind(a, ctx.trigger.s + ctx.trigger.s, a + a).split(''))"],
  ];

  it.each(built)("%s: the run ends in ERROR, CheckAutomationSteps reports it", async (_, expression) => {
    const hook = await createHooked(ts, { steps: [evaluateStep("build", { v: expression })] });
    const execution = await run(hook, JSON.stringify(payload));
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(execution.stepResults[0]).toEqual({ stepName: "build", state: "STEP_STATE_ERROR", output: null, error: valueError(0) });
    const report = unwrap(await api.check({ automationSteps: [evaluateStep("build", { v: expression })], samplePayload: payload }));
    expect(report.evaluations[0]).toEqual({ path: expect.any(String), value: null, error: valueError(0) });
  });

  it("a value of exactly the bound is built; one byte more is not", async () => {
    // As JSON, a string of n ASCII characters is n + 2 bytes.
    const { expression, t } = stringOf(VALUE_BOUND - 2);
    const hook = await createHooked(ts, { steps: [evaluateStep("edge", { n: `size(${expression})`, over: `size(${expression} + 'z')` })] });
    const execution = await run(hook, JSON.stringify({ s: S, t }));
    expect(execution.stepResults[0]).toEqual({ stepName: "edge", state: "STEP_STATE_ERROR", output: null, error: valueError(0, 1) });
    const within = await createHooked(ts, { steps: [evaluateStep("edge", { n: `size(${expression})` })] });
    expect((await run(within, JSON.stringify({ s: S, t }))).stepResults[0]).toMatchObject({ state: "STEP_STATE_DONE", output: { n: VALUE_BOUND - 2 } });
    // Counted in UTF-8 bytes, as stored: 'é' is two.
    const accented = await createHooked(ts, { steps: [evaluateStep("edge", { n: `size(${expression})` })] });
    const failed = await run(accented, JSON.stringify({ s: S, t: `é${t.slice(1)}` }));
    expect(failed.stepResults[0]).toMatchObject({ state: "STEP_STATE_ERROR", error: valueError(0) });
  });

  it("a result read from earlier outputs is bounded too", async () => {
    const half = stringOf(240_000);
    const hook = await createHooked(ts, {
      steps: [evaluateStep("a", { v: half.expression }), evaluateStep("b", { v: half.expression }), evaluateStep("both", { v: "ctx.steps" })],
    });
    const execution = await run(hook, JSON.stringify({ s: S, t: half.t }));
    expect(execution.stepResults.map((r) => r.state)).toEqual(["STEP_STATE_DONE", "STEP_STATE_DONE", "STEP_STATE_ERROR"]);
    expect(execution.stepResults[2]?.error).toBe(valueError(2));
  });
});

describe("each step's output and each execution's outputs are bounded", () => {
  /** `{"v":"..."}` of exactly `bytes` bytes as JSON. */
  const outputOf = (bytes: number) => stringOf(bytes - '{"v":""}'.length);

  it("a step's output of exactly the bound is stored; one byte more ends the execution in ERROR", async () => {
    const exact = outputOf(STEP_BOUND);
    const hook = await createHooked(ts, { steps: [evaluateStep("big", { v: exact.expression })] });
    const stored = await run(hook, JSON.stringify({ s: S, t: exact.t }));
    expect(stored.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(Buffer.byteLength(JSON.stringify(stored.stepResults[0]?.output))).toBe(STEP_BOUND);

    const over = await run(hook, JSON.stringify({ s: S, t: `${exact.t}y` }));
    expect(over.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(over.stepResults[0]).toEqual({ stepName: "big", state: "STEP_STATE_ERROR", output: null, error: stepError("big") });

    // Two values, each within the bound, make an output over it: refused at the second.
    const two = await createHooked(ts, { steps: [evaluateStep("two", { a: outputOf(150_000).expression, b: outputOf(150_000).expression })] });
    const failed = await run(two, JSON.stringify({ s: S, t: outputOf(150_000).t }));
    expect(failed.stepResults[0]).toEqual({ stepName: "two", state: "STEP_STATE_ERROR", output: null, error: stepError("two") });
  });

  it("outputs of exactly the execution's bound are stored; a step adding more ends it in ERROR; a skipped step adds nothing", async () => {
    const exact = outputOf(STEP_BOUND);
    const quarter = (name: string) => evaluateStep(name, { v: exact.expression });
    const payload = JSON.stringify({ s: S, t: exact.t, skip: true });
    const skipped = await createHooked(ts, { steps: [quarter("q1"), quarter("q2"), quarter("q3"), quarter("q4"), evaluateStep("more", { n: "1" }, "ctx.trigger.skip")] });
    const done = await run(skipped, payload);
    expect(done.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(done.stepResults.map((r) => r.state)).toEqual(["STEP_STATE_DONE", "STEP_STATE_DONE", "STEP_STATE_DONE", "STEP_STATE_DONE", "STEP_STATE_SKIPPED"]);
    expect(done.stepResults.reduce((n, r) => n + (r.output === null ? 0 : Buffer.byteLength(JSON.stringify(r.output))), 0)).toBe(EXECUTION_BOUND);

    const more = await createHooked(ts, { steps: [quarter("q1"), quarter("q2"), quarter("q3"), quarter("q4"), evaluateStep("more", { n: "1" })] });
    const failed = await run(more, payload);
    expect(failed.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(failed.stepResults[4]).toEqual({ stepName: "more", state: "STEP_STATE_ERROR", output: null, error: executionError("more") });
    // Every execution, at its largest, is still listed.
    const listed = unwrap(await api.executions({ page_size: 100 })).list.map((i) => i.automationExecution.id);
    expect(listed).toEqual(expect.arrayContaining([done.id, failed.id]));
  });

  it("CheckAutomationSteps applies the same bounds, and holds the values it shows besides outputs to the execution's bound", async () => {
    const exact = outputOf(STEP_BOUND);
    const sample = { s: S, t: exact.t };
    const quarter = (name: string) => evaluateStep(name, { v: exact.expression });
    const report = unwrap(await api.check({ automationSteps: [quarter("q1"), quarter("q2"), quarter("q3"), quarter("q4"), evaluateStep("more", { n: "1", q1: "size(ctx.steps.q1.v)" })], samplePayload: sample }));
    expect(report.evaluations.map((e) => e.error)).toEqual([null, null, null, null, executionError("more"), null]);
    expect(report.evaluations[5]?.value).toBe(STEP_BOUND - '{"v":""}'.length);

    const over = unwrap(await api.check({ automationSteps: [evaluateStep("big", { v: `${exact.expression} + 'y'` })], samplePayload: sample }));
    expect(over.evaluations).toEqual([{ path: expect.any(String), value: null, error: stepError("big") }]);

    // The values of skipped steps are shown but never stored: five of 240,002 bytes pass the bound at the fifth.
    const skipped = Array.from({ length: 5 }, (_, i) => evaluateStep(`skipped${i}`, { v: stringOf(240_000).expression }, "true"));
    const answer = await api.check({ automationSteps: skipped, samplePayload: { s: S, t: "" } });
    const shown = unwrap(answer).evaluations.filter((e) => e.path.endsWith(".expression"));
    expect(shown.map((e) => e.error)).toEqual([
      null,
      null,
      null,
      null,
      `withheld: the values of this check that a run would not store are larger than ${EXECUTION_BOUND} bytes as JSON together`,
    ]);
    // A reason is checked as a run checks it: one over 500 characters is the run's error, not a value shown.
    const reason: Step = { stepName: "act", suspendAppLimit: { userIdCel: "'u1'", appIdCel: "'app-1'", reasonCel: stringOf(240_000).expression } };
    const refused = unwrap(await api.check({ automationSteps: [reason], samplePayload: { s: S, t: "" } })).evaluations.find((e) => e.path.endsWith("reasonCel"));
    expect(refused).toMatchObject({ value: null, error: "automationSteps[0].suspendAppLimit.reasonCel: must be at most 500 characters" });
  });
});

describe("a page of large executions", () => {
  const PAGE_CHARS = 8 * 1024 * 1024;

  it("stops before 8 MiB as stored (ListAutomationExecutions held 100 executions of 1.1 MB, over 100 MB, in one answer); the pages still list each once", async () => {
    const exact = stringOf(STEP_BOUND - '{"v":""}'.length);
    const quarter = (name: string) => evaluateStep(name, { v: exact.expression });
    const hook = await createHooked(ts, { steps: [quarter("q1"), quarter("q2"), quarter("q3"), quarter("q4")] });
    const payload = JSON.stringify({ s: S, t: exact.t });
    const made: string[] = [];
    for (let i = 0; i < 9; i++) made.push((await run(hook, payload)).id);

    const pages: Execution[][] = [];
    let token: string | undefined;
    do {
      const page = unwrap(await api.executions({ automation_id: hook.id, page_size: 100, ...(token ? { page_token: token } : {}) }));
      pages.push(page.list.map((i) => i.automationExecution));
      token = page.nextPageToken || undefined;
    } while (token);
    const first = pages[0]!;
    expect(first.length).toBeGreaterThan(1);
    expect(first.length).toBeLessThan(9);
    // What the page holds of each execution, as stored: its trigger, steps and step results.
    const stored = (e: Execution) => JSON.stringify(e.context).length + JSON.stringify(hook.automation.automationSteps).length + JSON.stringify(e.stepResults).length;
    expect(first.reduce((n, e) => n + stored(e), 0)).toBeLessThanOrEqual(PAGE_CHARS);
    const listed = pages.flat().map((e) => e.id);
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual([...made].sort());
  });
});

describe("executions stored before the bounds", () => {
  it("are answered without their step results, by List and Get; others as they are", async () => {
    const hook = await createHooked(ts, { steps: [evaluateStep("amplify", { out: FINDING_STEP }), evaluateStep("after", { ok: "true" })] });
    const kept = await run(hook, '{"s":"a","list":[1]}');
    const storage = await openStorage(loadConfig({ DATABASE_URL: database.url }).database);
    const row = (id: string, stepResults: string) => ({
      id,
      automation_id: hook.id,
      event_id: randomUUID(),
      state: "AUTOMATION_EXECUTION_STATE_DONE",
      context: JSON.stringify({ trigger: { old: true } }),
      steps: JSON.stringify(hook.automation.automationSteps),
      step_results: stepResults,
      created_at: "2026-11-19T09:00:00.000Z",
      completed_at: "2026-11-19T09:00:01.000Z",
      lease_until: null,
      attempts: 1,
    });
    // Results of an unbounded build: an output of 2 MB; and results exactly as long as the bounds allow.
    const oversized = JSON.stringify([
      { stepName: "amplify", state: "STEP_STATE_DONE", output: { out: Array.from({ length: 64 }, () => "x".repeat(32_000)) }, error: null },
      { stepName: "after", state: "STEP_STATE_DONE", output: { ok: true }, error: null },
    ]);
    const shell = JSON.stringify([{ stepName: "amplify", state: "STEP_STATE_DONE", output: { out: "" }, error: null }]);
    const longest = shell.replace('"out":""', `"out":"${"x".repeat(1_114_112 - shell.length)}"`);
    expect(longest).toHaveLength(1_114_112);
    try {
      await storage.db.insertInto("automation_executions").values([row("exe_0ldOversized000", oversized), row("exe_0ldLongest00000", longest)]).execute();
    } finally {
      await storage.close();
    }

    const withheld = {
      stepName: expect.any(String),
      state: "STEP_STATE_UNSPECIFIED",
      output: null,
      error: "withheld: this execution's step results take more than 1114112 characters as stored (recorded before automations had size bounds)",
    };
    const old = unwrap(await api.execution("exe_0ldOversized000")).automationExecution;
    expect(old).toMatchObject({ state: "AUTOMATION_EXECUTION_STATE_DONE", context: { trigger: { old: true } } });
    expect(old.stepResults).toEqual([
      { ...withheld, stepName: "amplify" },
      { ...withheld, stepName: "after" },
    ]);
    expect(unwrap(await api.execution("exe_0ldLongest00000")).automationExecution.stepResults).toEqual(JSON.parse(longest));

    const listed = unwrap(await api.executions({ automation_id: hook.id })).list.map((i) => i.automationExecution);
    expect(listed.map((e) => e.id)).toEqual([kept.id, "exe_0ldOversized000", "exe_0ldLongest00000"]);
    expect(listed[0]).toEqual(kept);
    expect(listed[1]).toEqual(old);
  });
});

describe("against a server process with a 192 MB heap", () => {
  let served: Served | undefined;
  let processDatabase: TestDatabase | undefined;
  let processDir: string | undefined;

  beforeAll(async () => {
    processDir = mkdtempSync(join(tmpdir(), "tenant-budget-process-"));
    processDatabase = await createTestDatabase(processDir);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    served = await serve({
      command: process.execPath,
      args: ["--max-old-space-size=192", "--import", "tsx", join(root, "src/main.ts")],
      url,
      probePath: "/readyz",
      timeoutMs: 90_000,
      env: {
        PORT: String(port),
        HOST: "127.0.0.1",
        BASE_URL: url,
        DATABASE_URL: processDatabase.url,
        SECRETS_KEY: Buffer.alloc(32, 9).toString("base64url"),
        BOOTSTRAP_CLIENT_ID: BOOTSTRAP.clientId,
        BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP.clientSecret,
        LOG_LEVEL: "warn",
      },
    });
  }, 120_000);
  afterAll(async () => {
    await served?.stop();
    await processDatabase?.drop();
    if (processDir) rmSync(processDir, { recursive: true, force: true });
  });

  it("the finding's exact payload: answered, the execution ends ERROR, /healthz answers, the list answers 200", async () => {
    const server = served!;
    const admin = createApiClient({ baseUrl: server.url, credentials: BOOTSTRAP });
    const created = unwrap(
      await admin.POST("/api/v1/automations", {
        body: {
          automation: {
            displayName: "amplification",
            isDraft: false,
            enabled: true,
            triggers: [{ webhook: { hmac: {} } }],
            automationSteps: [{ stepName: "amplify", evaluateExpressions: { expressions: [{ name: "out", expression: FINDING_STEP }] } }],
          },
        },
      }),
    );
    const listener = webhookTrigger(created.automation)!.url!;
    const answer = await postRaw(listener, { headers: hmacHeaders(created.webhookSecret!, FINDING_PAYLOAD, String(Math.floor(Date.now() / 1000)), randomUUID()), body: FINDING_PAYLOAD });
    const executionId = expectAccepted(answer).automationExecutionId!;

    let execution: Execution | undefined;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
      execution = unwrap(await admin.GET("/api/v1/automation_executions/{id}", { params: { path: { id: executionId } } })).automationExecution;
      if (execution.state !== "AUTOMATION_EXECUTION_STATE_PENDING" && execution.state !== "AUTOMATION_EXECUTION_STATE_RUNNING") break;
    }
    expect(execution?.state, server.output()).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(execution?.stepResults[0]?.error).toBe(valueError(0));

    const health = Date.now();
    expect((await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
    expect(Date.now() - health).toBeLessThan(2_000);
    const list = await admin.GET("/api/v1/automation_executions", { params: { query: { page_size: 100 } } });
    expect(list.response.status).toBe(200);
    expect(unwrap(list).list.map((i) => i.automationExecution.id)).toEqual([executionId]);
    expect(server.child.exitCode, server.output()).toBeNull();
  }, 60_000);
});
