// The count behind tenant_api_executions_waiting, on the test database's dialect (TEST_DATABASE):
// the pending executions and the runs whose lease lapsed, not the runs still under their lease nor
// the finished ones, up to the cap.
import { expect, it } from "vitest";
import { newExecution } from "../../src/automations/executions.js";
import { countRunnable } from "../../src/automations/execution-claims.js";
import { freshStorageEachTest } from "../support/storage.js";

const fresh = freshStorageEachTest("tenant-api-count-runnable");

const STEPS = JSON.stringify([{ stepName: "a", evaluateExpressions: { expressions: [] } }]);
const NOW = "2026-01-01T00:10:00.000Z";
const LAPSED = "2026-01-01T00:09:00.000Z";
const LIVE = "2026-01-01T00:11:00.000Z";

const PENDING = 7;
const LAPSED_RUNS = 4;

async function seed(): Promise<void> {
  let n = 0;
  const at = () => new Date(Date.parse("2026-01-01T00:00:00.000Z") + 1000 * n++).toISOString();
  const pending = Array.from({ length: PENDING }, (_, i) => newExecution("aut_x", `evt_p${i}`, { trigger: {} }, STEPS, at()));
  const lapsed = Array.from({ length: LAPSED_RUNS }, (_, i) => newExecution("aut_x", `evt_l${i}`, { trigger: {} }, STEPS, at(), LAPSED));
  // A lease that ends exactly now is not lapsed yet (lease_until < now).
  const live = [LIVE, "2099-01-01T00:00:00.000Z", NOW].map((lease, i) => newExecution("aut_x", `evt_h${i}`, { trigger: {} }, STEPS, at(), lease));
  // Finished, whatever their lease said: never runnable.
  const finished = (["AUTOMATION_EXECUTION_STATE_DONE", "AUTOMATION_EXECUTION_STATE_ERROR", "AUTOMATION_EXECUTION_STATE_DONE"] as const).map((state, i) => ({
    ...newExecution("aut_x", `evt_f${i}`, { trigger: {} }, STEPS, at(), i === 0 ? LAPSED : undefined),
    state,
    completed_at: NOW,
    attempts: 1,
  }));
  await fresh.storage.db.insertInto("automation_executions").values([...pending, ...lapsed, ...live, ...finished]).execute();
}

it("counts the pending executions and the runs whose lease lapsed, not the live runs nor the finished", async () => {
  expect(await countRunnable(fresh.storage.db, NOW, 10_000)).toBe(0);
  await seed();
  expect(await countRunnable(fresh.storage.db, NOW, 10_000)).toBe(PENDING + LAPSED_RUNS);
  expect(await countRunnable(fresh.storage.db, NOW, PENDING + LAPSED_RUNS)).toBe(PENDING + LAPSED_RUNS);
  // Later, the live leases have lapsed too (all but the one until 2099).
  expect(await countRunnable(fresh.storage.db, "2026-01-01T00:12:00.000Z", 10_000)).toBe(PENDING + LAPSED_RUNS + 2);
  // Earlier, before any lease lapsed: only the pending ones.
  expect(await countRunnable(fresh.storage.db, "2026-01-01T00:08:00.000Z", 10_000)).toBe(PENDING);
});

it("answers the cap when fewer than are runnable", async () => {
  await seed();
  const total = PENDING + LAPSED_RUNS;
  // Within the lapsed runs (counted first), at the boundary between the two kinds, and within the pending.
  for (const cap of [1, LAPSED_RUNS - 1, LAPSED_RUNS, LAPSED_RUNS + 1, total - 1]) expect(await countRunnable(fresh.storage.db, NOW, cap), `cap ${cap}`).toBe(cap);
  expect(await countRunnable(fresh.storage.db, NOW, total + 1)).toBe(total);
  expect(await countRunnable(fresh.storage.db, NOW, 0)).toBe(0);
});
