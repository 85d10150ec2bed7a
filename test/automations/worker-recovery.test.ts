// The execution worker after a fault of the database, on the test database's dialect
// (TEST_DATABASE), with a runner of the test's: a run the database failed under is claimed again
// as soon as the database answers (its lease ended), not when the lease would have lapsed (the
// test's clock does not move); so is an execution leased at insert whose record failed (it may have
// committed). Runs that hold every slot without progress while runs are due make the worker stuck, until one ends;
// claims failing for a fault that is not the database's being unavailable do not.
import { sql } from "kysely";
import { afterEach, beforeEach, expect, it } from "vitest";
import { newExecution } from "../../src/automations/executions.js";
import type { ExecutionRunner } from "../../src/automations/runner.js";
import { Worker, WORKER_DEFAULTS } from "../../src/automations/worker.js";
import { ManualClock } from "../../src/core/clock.js";
import { createLogger } from "../../src/core/logger.js";
import { PageTokens } from "../../src/core/pagination.js";
import type { AutomationExecutionsTable } from "../../src/storage/schema.js";
import { WebhookEvents } from "../../src/webhooks/events.js";
import { freshStorageEachTest } from "../support/storage.js";

const fresh = freshStorageEachTest("tenant-api-worker-recovery");

const T0 = Date.parse("2026-11-23T10:00:00Z");
const STEPS = JSON.stringify([{ stepName: "a", evaluateExpressions: { expressions: [] } }]);
const reset = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

let clock: ManualClock;
/** Each run's execution as the worker handed it. */
let runs: AutomationExecutionsTable[];
let run: (execution: AutomationExecutionsTable) => Promise<void>;
let worker: Worker;

beforeEach(() => {
  clock = new ManualClock(T0);
  runs = [];
  run = async () => undefined;
  const runner = { run: (e: AutomationExecutionsTable) => (runs.push(e), run(e)) } as unknown as ExecutionRunner;
  const events = new WebhookEvents(fresh.storage, clock, new PageTokens(Buffer.alloc(32, 1)));
  worker = new Worker({ storage: fresh.storage, clock, runner, events, logger: createLogger("silent") }, { ...WORKER_DEFAULTS, pollMs: 50, stuckMs: 300 });
});

afterEach(async () => {
  await worker.stop();
});

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const stored = (id: string) => fresh.storage.db.selectFrom("automation_executions").select(["state", "lease_until", "attempts"]).where("id", "=", id).executeTakeFirstOrThrow();

it("a run the database failed under is claimed again at once, under a new lease", async () => {
  const execution = newExecution("aut_x", "evt_1", { trigger: {} }, STEPS, new Date(T0).toISOString());
  await fresh.storage.db.insertInto("automation_executions").values(execution).execute();
  run = async () => {
    if (runs.length === 1) throw reset();
  };
  worker.start();
  await until(() => runs.length === 2, "the execution to run again");
  expect(runs.map((e) => [e.id, e.attempts])).toEqual([
    [execution.id, 1],
    [execution.id, 2],
  ]);
  expect(runs[1]!.lease_until).toBe(new Date(T0 + WORKER_DEFAULTS.leaseMs).toISOString());
  await worker.idle();
  expect(runs).toHaveLength(2);
});

it("an execution leased at insert whose record failed, yet committed: claimed again at once; one claimed since by another is left alone", async () => {
  const lease = new Date(T0 + WORKER_DEFAULTS.leaseMs).toISOString();
  const committed = newExecution("aut_x", "evt_1", { trigger: {} }, STEPS, new Date(T0).toISOString(), lease);
  const other = newExecution("aut_x", "evt_2", { trigger: {} }, STEPS, new Date(T0).toISOString(), lease);
  await fresh.storage.db.insertInto("automation_executions").values([committed, { ...other, lease_until: "2026-11-23T10:05:00.000Z" }]).execute();
  worker.start();
  worker.notRecorded(committed);
  worker.notRecorded(other);
  worker.notify();
  await until(() => runs.length === 1, "the execution to run");
  await worker.idle();
  expect(runs.map((e) => [e.id, e.attempts])).toEqual([[committed.id, 2]]);
  expect(await stored(other.id)).toEqual({ state: "AUTOMATION_EXECUTION_STATE_RUNNING", lease_until: "2026-11-23T10:05:00.000Z", attempts: 1 });
});

it("stuck while its runs make no progress past stuckMs (every slot held: nothing else can start), not once one ends", async () => {
  let finish = () => undefined as void;
  run = () => new Promise<void>((resolve) => (finish = resolve));
  const runner = { run: (e: AutomationExecutionsTable) => (runs.push(e), run(e)) } as unknown as ExecutionRunner;
  const events = new WebhookEvents(fresh.storage, clock, new PageTokens(Buffer.alloc(32, 1)));
  worker = new Worker({ storage: fresh.storage, clock, runner, events, logger: createLogger("silent") }, { ...WORKER_DEFAULTS, pollMs: 50, stuckMs: 300, maxRuns: 1 });
  worker.start();
  await worker.idle();
  expect(worker.stuck()).toBe(false);
  await fresh.storage.db.insertInto("automation_executions").values(newExecution("aut_x", "evt_1", { trigger: {} }, STEPS, new Date(T0).toISOString())).execute();
  await until(() => runs.length === 1, "the run to start");
  expect(worker.stuck()).toBe(false);
  await until(() => worker.stuck(), "the worker to be stuck");
  finish();
  await until(() => !worker.stuck(), "the worker to progress");
});

it("claims failing for a fault of ours (a schema that changed under it) do not make it stuck; it claims again once they pass", async () => {
  const column = (from: string, to: string) => sql`alter table automation_executions rename column ${sql.ref(from)} to ${sql.ref(to)}`.execute(fresh.storage.db);
  await column("lease_until", "lease_until_renamed");
  worker.start();
  worker.notify();
  // Polls every 50 ms; stuck would hold past 300 ms.
  await new Promise((resolve) => setTimeout(resolve, 900));
  expect(worker.stuck()).toBe(false);
  expect(runs).toEqual([]);
  await column("lease_until_renamed", "lease_until");
  await fresh.storage.db.insertInto("automation_executions").values(newExecution("aut_x", "evt_1", { trigger: {} }, STEPS, new Date(T0).toISOString())).execute();
  worker.notify();
  await until(() => runs.length === 1, "the execution to run");
});
