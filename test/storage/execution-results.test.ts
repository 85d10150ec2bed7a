// Execution results saved outside a step's transaction: on PostgreSQL the saves queued together go
// in one UPDATE, each row with its own values; a save without a final state keeps the state and
// the lease; a save of a run whose lease passed to another changes nothing and fails (LeaseLost),
// alone or in a step's transaction. Runs on the test database's dialect (TEST_DATABASE).
import { describe, expect, it, vi } from "vitest";
import { newExecution } from "../../src/automations/executions.js";
import { LeaseLost, saveResults, saveResultsAlone } from "../../src/automations/execution-results.js";
import { writeTransaction } from "../../src/storage/transactions.js";
import { freshStorageEachTest } from "../support/storage.js";

const fresh = freshStorageEachTest("tenant-api-results");

const STEPS = JSON.stringify([{ stepName: "a", evaluateExpressions: { expressions: [] } }]);
const LEASE = "2026-01-01T00:01:00.000Z";

describe("saveResultsAlone", () => {
  it("saves each execution's own results, ending the lease only with a final state", async () => {
    const executions = Array.from({ length: 6 }, (_, i) => newExecution("aut_x", `evt_${i}`, { trigger: { i } }, STEPS, `2026-01-01T00:00:0${i}.000Z`, LEASE));
    await fresh.storage.db.insertInto("automation_executions").values(executions).execute();
    await Promise.all(
      executions.map((e, i) =>
        saveResultsAlone(fresh.storage, { id: e.id, lease: LEASE, stepResults: `["r${i}"]`, final: i % 2 === 0 ? { state: "AUTOMATION_EXECUTION_STATE_DONE", completedAt: `2026-01-01T00:00:3${i}.000Z` } : undefined }),
      ),
    );
    const rows = await fresh.storage.db.selectFrom("automation_executions").select(["id", "state", "step_results", "completed_at", "lease_until"]).orderBy("created_at").execute();
    expect(rows).toEqual(
      executions.map((e, i) =>
        i % 2 === 0
          ? { id: e.id, state: "AUTOMATION_EXECUTION_STATE_DONE", step_results: `["r${i}"]`, completed_at: `2026-01-01T00:00:3${i}.000Z`, lease_until: null }
          : { id: e.id, state: "AUTOMATION_EXECUTION_STATE_RUNNING", step_results: `["r${i}"]`, completed_at: null, lease_until: LEASE },
      ),
    );
  });

  it("saves a queue larger than one UPDATE takes, in several", async () => {
    const big = "x".repeat(1024 * 1024);
    const executions = Array.from({ length: 6 }, (_, i) => newExecution("aut_x", `evt_${i}`, { trigger: {} }, STEPS, `2026-01-01T00:00:0${i}.000Z`, LEASE));
    await fresh.storage.db.insertInto("automation_executions").values(executions).execute();
    await Promise.all(executions.map((e) => saveResultsAlone(fresh.storage, { id: e.id, lease: LEASE, stepResults: big, final: { state: "AUTOMATION_EXECUTION_STATE_DONE", completedAt: "2026-01-01T00:01:00.000Z" } })));
    const rows = await fresh.storage.db.selectFrom("automation_executions").select(["state", "step_results"]).execute();
    expect(rows.map((r) => [r.state, r.step_results.length])).toEqual(executions.map(() => ["AUTOMATION_EXECUTION_STATE_DONE", big.length]));
  });

  it("fails a save the database refuses alone: the others queued with it are saved", async () => {
    const executions = Array.from({ length: 4 }, (_, i) => newExecution("aut_x", `evt_${i}`, { trigger: {} }, STEPS, `2026-01-01T00:00:0${i}.000Z`, LEASE));
    await fresh.storage.db.insertInto("automation_executions").values(executions).execute();
    // A NUL character: PostgreSQL's text refuses it, SQLite's takes it (the runner saves JSON text, which escapes it).
    const refused = "[\"\u0000\"]";
    const outcomes = await Promise.allSettled(
      executions.map((e, i) => saveResultsAlone(fresh.storage, { id: e.id, lease: LEASE, stepResults: i === 1 ? refused : `["r${i}"]`, final: { state: "AUTOMATION_EXECUTION_STATE_DONE", completedAt: "2026-01-01T00:01:00.000Z" } })),
    );
    const rows = await fresh.storage.db.selectFrom("automation_executions").select(["step_results"]).orderBy("created_at").execute();
    if (fresh.storage.dialect === "postgres") {
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
      expect(rows.map((r) => r.step_results)).toEqual([`["r0"]`, executions[1]!.step_results, `["r2"]`, `["r3"]`]);
    } else {
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
    }
  });

  it.runIf(process.env.TEST_DATABASE === "postgres")("fails the whole batch at once when the database is unavailable, without trying each save again", async () => {
    const executions = Array.from({ length: 4 }, (_, i) => newExecution("aut_x", `evt_${i}`, { trigger: {} }, STEPS, `2026-01-01T00:00:0${i}.000Z`, LEASE));
    await fresh.storage.db.insertInto("automation_executions").values(executions).execute();
    const unavailable = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const queries = vi.spyOn(fresh.storage.db, "executeQuery").mockRejectedValue(unavailable);
    try {
      const outcomes = await Promise.allSettled(executions.map((e) => saveResultsAlone(fresh.storage, { id: e.id, lease: LEASE, stepResults: "[]" })));
      expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
      expect(queries).toHaveBeenCalledTimes(1);
    } finally {
      queries.mockRestore();
    }
  });

  it("saves nothing for a run whose lease passed to another: LeaseLost, the others queued with it saved; in a transaction too", async () => {
    const executions = Array.from({ length: 3 }, (_, i) => newExecution("aut_x", `evt_${i}`, { trigger: {} }, STEPS, `2026-01-01T00:00:0${i}.000Z`, LEASE));
    await fresh.storage.db.insertInto("automation_executions").values(executions).execute();
    const other = "2026-01-01T00:02:00.000Z";
    await fresh.storage.db.updateTable("automation_executions").set({ lease_until: other }).where("id", "=", executions[1]!.id).execute();
    const done = { state: "AUTOMATION_EXECUTION_STATE_DONE", completedAt: "2026-01-01T00:01:00.000Z" };
    const outcomes = await Promise.allSettled(executions.map((e, i) => saveResultsAlone(fresh.storage, { id: e.id, lease: LEASE, stepResults: `["r${i}"]`, final: done })));
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLost);
    const rows = await fresh.storage.db.selectFrom("automation_executions").select(["step_results", "lease_until"]).orderBy("created_at").execute();
    expect(rows).toEqual([
      { step_results: `["r0"]`, lease_until: null },
      { step_results: executions[1]!.step_results, lease_until: other },
      { step_results: `["r2"]`, lease_until: null },
    ]);

    // In a step's transaction, the effect written before the save is rolled back with it.
    const inStep = writeTransaction(fresh.storage, { exclusive: ["test"] }, async (db) => {
      await db.updateTable("automation_executions").set({ context: '{"effect":true}' }).where("id", "=", executions[1]!.id).execute();
      await saveResults(db, { id: executions[1]!.id, lease: LEASE, stepResults: "[]" });
    });
    await expect(inStep).rejects.toBeInstanceOf(LeaseLost);
    const kept = await fresh.storage.db.selectFrom("automation_executions").select(["context", "step_results"]).where("id", "=", executions[1]!.id).executeTakeFirstOrThrow();
    expect(kept).toEqual({ context: executions[1]!.context, step_results: executions[1]!.step_results });
  });
});
