// The intake's hand-off to the worker of its process: an execution inserted already claimed (under
// the lease the worker gave) is run from memory, without a claim; past the hand-off's bound, and
// before the worker starts or once it stops, the intake is told to insert executions pending. A
// worker that stops releases what it was handed and had not begun.
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

  it("once stopping it gives no lease; the run under way finishes, and what it holds and has not begun is released at once, for any worker", async () => {
    let finish: () => void = () => undefined;
    const blocked = new Promise<void>((resolve) => (finish = resolve));
    const runner = { run: async (e: AutomationExecutionsTable) => (ran.push(e.id), e.id === "exe_first" ? blocked : undefined) } as unknown as ExecutionRunner;
    const stopping = new Worker({ storage, clock, runner, events: new WebhookEvents(storage, clock, new PageTokens(Buffer.alloc(32, 1))), logger: createLogger("silent") }, { ...WORKER_DEFAULTS, maxRuns: 1, claimBatch: 1, handOff: 8 });
    stopping.start();
    await stopping.idle();
    const lease = stopping.directLease()!;
    const held = ["exe_first", "exe_second", "exe_third"].map((id) => row(id, "AUTOMATION_EXECUTION_STATE_RUNNING", lease));
    // exe_third's lease lapsed meanwhile and another worker claimed it: not this worker's to release.
    const reclaimed = new Date(T0 + 2 * WORKER_DEFAULTS.leaseMs).toISOString();
    await storage.db.insertInto("automation_executions").values(held.map((e) => (e.id === "exe_third" ? { ...e, lease_until: reclaimed } : e))).execute();
    for (const e of held) stopping.take(e);
    while (ran.length === 0) await new Promise((resolve) => setImmediate(resolve));

    const stopped = stopping.stop();
    expect(stopping.directLease()).toBeUndefined();
    // Leased before the stop, its record committed after it: released too.
    const late = row("exe_late", "AUTOMATION_EXECUTION_STATE_RUNNING", lease);
    await storage.db.insertInto("automation_executions").values(late).execute();
    stopping.take(late);
    const states = async () => Object.fromEntries((await storage.db.selectFrom("automation_executions").select(["id", "state", "lease_until"]).execute()).map((r) => [r.id, [r.state, r.lease_until]]));
    for (let i = 0; i < 100 && (await states()).exe_late?.[0] !== "AUTOMATION_EXECUTION_STATE_PENDING"; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await states()).toEqual({
      exe_first: ["AUTOMATION_EXECUTION_STATE_RUNNING", lease],
      exe_second: ["AUTOMATION_EXECUTION_STATE_PENDING", null],
      exe_third: ["AUTOMATION_EXECUTION_STATE_RUNNING", reclaimed],
      exe_late: ["AUTOMATION_EXECUTION_STATE_PENDING", null],
    });
    expect(stopping.runs()).toEqual(["exe_first"]);
    let done = false;
    void stopped.then(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(done).toBe(false);
    finish();
    await stopped;
    expect(ran).toEqual(["exe_first"]);

    // The next worker claims what was released at once.
    worker.start();
    await worker.idle();
    expect(ran.sort()).toEqual(["exe_first", "exe_late", "exe_second"]);
  });
});
