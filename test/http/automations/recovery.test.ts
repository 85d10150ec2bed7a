// Exactly once across a crash: an accepted event is committed with its execution before the 200, so
// a server that stops before running it leaves it for the next server on the same database, which
// runs it once. A run that was claimed and then died (its lease held, some steps done) is resumed
// once the lease lapses, at the first step without a result: no step's effect happens twice.
// Several servers in turn on one database file (and one secrets key file) in a directory of this test.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage } from "../../../src/storage/connect.js";
import { createTestDatabase, type TestDatabase } from "../../support/database.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { amount, expectError, funds, newAppId, shown } from "../limits/helpers.js";
import { automationsApi, createHooked, evaluateStep, executionsOf, expectAccepted, expectRefused, newEventId, sendHmac, settled, type Hooked } from "../webhooks/helpers.js";
import { webhookTrigger } from "../../support/triggers.js";

const dir = mkdtempSync(join(tmpdir(), "tenant-recovery-"));
let database: TestDatabase;
let env: Record<string, string>;

let current: TestServer | undefined;
beforeAll(async () => {
  database = await createTestDatabase(dir);
  env = { DATABASE_URL: database.url, SECRETS_KEY_FILE: join(dir, "secrets.key") };
});
afterAll(async () => {
  await current?.stop();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function restart(): Promise<TestServer> {
  await current?.stop();
  current = await startTestServer(env);
  return current;
}

describe("an accepted event survives the process that accepted it", () => {
  let subject: string;
  let hook: Hooked;
  let appA: string;
  let appB: string;
  let eventA: string;
  let executionA: string;
  let executionB: string;

  beforeAll(async () => {
    const ts = await restart();
    subject = (await ts.userClient(["ROLE_USER"])).userId;
    appA = newAppId();
    appB = newAppId();
    for (const app of [appA, appB]) unwrap(await funds(ts.admin).setLimit(subject, app, { limit: amount("250") }));
    hook = await createHooked(ts, {
      steps: [
        { stepName: "suspend", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId", reasonCel: '"from the webhook"' } },
        evaluateStep("report", { suspendedApp: "ctx.steps.suspend.limit.appId" }),
      ],
    });
  });

  it("a server whose worker is stopped answers 200 with the execution committed, PENDING, before it runs", async () => {
    const ts = current!;
    await ts.server.worker.stop();
    eventA = newEventId();
    const a = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ userId: subject, appId: appA }), { eventId: eventA }));
    const b = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ userId: subject, appId: appB })));
    executionA = a.automationExecutionId!;
    executionB = b.automationExecutionId!;
    for (const id of [executionA, executionB]) {
      const execution = unwrap(await automationsApi(ts.admin).execution(id)).automationExecution;
      expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_PENDING");
      expect(execution.stepResults.map((s) => s.state)).toEqual(["STEP_STATE_PENDING", "STEP_STATE_PENDING"]);
    }
    expect((await funds(ts.admin).get(subject, appA)).data?.limit.controls?.suspension).toBeNull();
  });

  it("between servers: execution B is left as a worker that claimed it, committed its first step and died would leave it", async () => {
    await current!.stop();
    current = undefined;
    const storage = await openStorage(loadConfig({ DATABASE_URL: database.url }).database);
    try {
      // The next server's clock starts at the harness's fixed time.
      const now = Date.parse("2026-11-20T09:00:00Z");
      // B: claimed with a lease until 10 minutes from the next server's start, its first step recorded
      // as done (with a marker output) without its effect: if it ran again, appB would be suspended.
      await storage.db
        .updateTable("automation_executions")
        .set({
          state: "AUTOMATION_EXECUTION_STATE_RUNNING",
          lease_until: new Date(now + 600_000).toISOString(),
          attempts: 1,
          step_results: JSON.stringify([
            { stepName: "suspend", state: "STEP_STATE_DONE", output: { limit: { appId: "marker-from-the-first-run" } }, error: null },
            { stepName: "report", state: "STEP_STATE_PENDING", output: null, error: null },
          ]),
        })
        .where("id", "=", executionB)
        .execute();
    } finally {
      await storage.close();
    }
  });

  it("the next server on the same database runs the pending execution exactly once", async () => {
    const ts = await restart();
    await ts.server.worker.idle();
    const a = await settled(ts, executionA);
    expect(a.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(a.stepResults.map((s) => s.state)).toEqual(["STEP_STATE_DONE", "STEP_STATE_DONE"]);
    expect(a.stepResults[1]?.output).toEqual({ suspendedApp: appA });
    const row = unwrap(await funds(ts.admin).get(subject, appA)).limit;
    expect(row.controls).toEqual(shown({ limit: amount("250"), suspension: { reason: "from the webhook", suspendedAt: new Date(ts.clock.now()).toISOString() } }));
    expect(a.stepResults[0]?.output).toEqual({ limit: row });
    // One execution per accepted event; the event id is still known (409), the secret still works.
    const executions = await executionsOf(ts.admin, hook.id);
    expect(executions.map((e) => e.id).sort()).toEqual([executionA, executionB].sort());
    // (Each server of this test listens on a port of its own, so the listener's URL changes with BASE_URL.)
    const url = webhookTrigger(unwrap(await automationsApi(ts.admin).get(hook.id)).automation)?.url ?? "";
    expect(url).toBe(`${ts.url}/api/v1/webhooks/incoming/${hook.listenerId}`);
    expectRefused(await sendHmac(ts, url, hook.secret, JSON.stringify({ userId: subject, appId: appA }), { eventId: eventA }), 409, "DUPLICATE_EVENT");
    expectRefused(await sendHmac(ts, url, "not-the-secret", "{}"), 401, "INVALID_SIGNATURE");
    expect(unwrap(await automationsApi(ts.admin).get(hook.id)).automation.lastExecutedAt).not.toBeNull();
  });

  it("a run that died holding its lease is left alone until the lease lapses, then resumed at its first unfinished step", async () => {
    const ts = current!;
    ts.server.worker.notify();
    await ts.server.worker.idle();
    const held = unwrap(await automationsApi(ts.admin).execution(executionB)).automationExecution;
    expect(held.state).toBe("AUTOMATION_EXECUTION_STATE_RUNNING");
    expect(held.stepResults[1]?.state).toBe("STEP_STATE_PENDING");

    ts.clock.advance(600_001);
    ts.server.worker.notify();
    const b = await settled(ts, executionB);
    expect(b.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    // The first step was not run again: its recorded output is kept, and its effect never happened.
    expect(b.stepResults[0]).toEqual({ stepName: "suspend", state: "STEP_STATE_DONE", output: { limit: { appId: "marker-from-the-first-run" } }, error: null });
    expect(b.stepResults[1]).toMatchObject({ state: "STEP_STATE_DONE", output: { suspendedApp: "marker-from-the-first-run" } });
    expect(unwrap(await funds(ts.admin).get(subject, appB)).limit.controls).toEqual(shown({ limit: amount("250") }));

    // Running the worker again changes nothing.
    ts.clock.advance(3_600_000);
    ts.server.worker.notify();
    await ts.server.worker.idle();
    expect(unwrap(await automationsApi(ts.admin).execution(executionB)).automationExecution).toEqual(b);
    expect(await executionsOf(ts.admin, hook.id)).toHaveLength(2);
  });

  it("another restart re-runs nothing", async () => {
    const ts = await restart();
    await ts.server.worker.idle();
    const executions = await executionsOf(ts.admin, hook.id);
    expect(executions.every((e) => e.state === "AUTOMATION_EXECUTION_STATE_DONE")).toBe(true);
    expect(executions).toHaveLength(2);
    const row = unwrap(await funds(ts.admin).get(subject, appA)).limit;
    expect(row.controls?.suspension?.reason).toBe("from the webhook");
    expectError(await automationsApi(ts.admin).execution("exe_none"), 404, "EXECUTION_NOT_FOUND");
  });
});
