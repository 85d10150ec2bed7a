// The intake's hand-off to the worker of its process: an execution inserted already claimed (under
// the lease the worker gave) is run from memory, without a claim; past the hand-off's bound, and
// before the worker starts or once it stops, the intake is told to insert executions pending.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { createLogger } from "../../src/core/logger.js";
import { PageTokens } from "../../src/core/pagination.js";
import type { ExecutionRunner } from "../../src/automations/runner.js";
import { Worker, WORKER_DEFAULTS } from "../../src/automations/worker.js";
import { openStorage, type Storage } from "../../src/storage/connect.js";
import type { AutomationExecutionsTable } from "../../src/storage/schema.js";
import { WebhookEvents } from "../../src/webhooks/events.js";

const T0 = Date.parse("2026-11-23T10:00:00Z");

let dir: string;
let storage: Storage;
let clock: ManualClock;
let ran: string[];
let worker: Worker;

const row = (id: string, state: string, leaseUntil: string | null): AutomationExecutionsTable => ({
  id,
  automation_id: "aut_x",
  event_id: `ev_${id}`,
  state,
  context: "{}",
  steps: "[]",
  step_results: "[]",
  created_at: new Date(clock.now()).toISOString(),
  completed_at: null,
  lease_until: leaseUntil,
  attempts: leaseUntil ? 1 : 0,
});

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-hand-off-"));
  storage = await openStorage({ kind: "sqlite", path: join(dir, "db.sqlite") });
  clock = new ManualClock(T0);
  ran = [];
  const runner = { run: async (e: AutomationExecutionsTable) => void ran.push(e.id) } as unknown as ExecutionRunner;
  const events = new WebhookEvents(storage, clock, new PageTokens(Buffer.alloc(32, 1)));
  worker = new Worker({ storage, clock, runner, events, logger: createLogger("silent") }, { ...WORKER_DEFAULTS, handOff: 2, claimBatch: 1 });
});

afterEach(async () => {
  await worker.stop();
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("Worker hand-off", () => {
  it("gives no lease before it starts: the intake inserts the execution pending", () => {
    expect(worker.directLease()).toBeUndefined();
  });

  it("leases for its own lease time and runs what it is handed from memory, not from the database", async () => {
    worker.start();
    const lease = worker.directLease();
    expect(lease).toBe(new Date(T0 + WORKER_DEFAULTS.leaseMs).toISOString());
    // Not in the database at all: a claim could not have found it.
    worker.take(row("exe_handed", "AUTOMATION_EXECUTION_STATE_RUNNING", lease!));
    await worker.idle();
    expect(ran).toEqual(["exe_handed"]);
  });

  it("past its bound it gives no lease, and pending executions are still claimed from the database", async () => {
    worker.start();
    await worker.idle();
    const a = worker.directLease()!;
    worker.take(row("exe_a", "AUTOMATION_EXECUTION_STATE_RUNNING", a));
    const b = worker.directLease()!;
    worker.take(row("exe_b", "AUTOMATION_EXECUTION_STATE_RUNNING", b));
    expect(worker.directLease()).toBeUndefined();
    await storage.db.insertInto("automation_executions").values(row("exe_pending", "AUTOMATION_EXECUTION_STATE_PENDING", null)).execute();
    worker.notify();
    await worker.idle();
    expect(ran.sort()).toEqual(["exe_a", "exe_b", "exe_pending"]);
    expect(worker.directLease()).toBeDefined();
  });

  it("takes turns between what it was handed and what waits in the database: neither starves", async () => {
    worker.start();
    await worker.idle();
    await storage.db.insertInto("automation_executions").values(row("exe_pending", "AUTOMATION_EXECUTION_STATE_PENDING", null)).execute();
    worker.notify();
    // One run per turn (claimBatch 1), and two more handed over every turn, as a steady load would.
    const lease = new Date(T0 + WORKER_DEFAULTS.leaseMs).toISOString();
    for (let i = 0; i < 3; i++) {
      for (const n of [1, 2]) worker.take(row(`exe_h${i}${n}`, "AUTOMATION_EXECUTION_STATE_RUNNING", lease));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await worker.idle();
    expect(ran).toHaveLength(7);
    expect(ran.indexOf("exe_pending")).toBeLessThan(3);
  });

  it("once stopping it gives no lease, yet runs what it was already handed before it stops", async () => {
    worker.start();
    await worker.idle();
    // One run per turn (claimBatch 1): the second is still waiting when the stop begins.
    for (const id of ["exe_first", "exe_last"]) worker.take(row(id, "AUTOMATION_EXECUTION_STATE_RUNNING", worker.directLease()!));
    const stopped = worker.stop();
    expect(worker.directLease()).toBeUndefined();
    await stopped;
    expect(ran).toEqual(["exe_first", "exe_last"]);
  });
});
