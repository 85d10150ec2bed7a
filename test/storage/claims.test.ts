// Claims on the test database's dialect (TEST_DATABASE): runs whose lease lapsed first, then the
// oldest pending executions, within the limit; a run still under its lease is left alone.
import { expect, it } from "vitest";
import { newExecution } from "../../src/automations/executions.js";
import { claimExecutions } from "../../src/automations/execution-claims.js";
import { freshStorageEachTest } from "../support/storage.js";

const fresh = freshStorageEachTest("tenant-api-claims");

const STEPS = JSON.stringify([{ stepName: "a", evaluateExpressions: { expressions: [] } }]);
const NOW = "2026-01-01T00:10:00.000Z";
const LEASE = "2026-01-01T00:11:00.000Z";

it("claims lapsed runs first, then the oldest pending, up to the limit, each once", async () => {
  const at = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, "0")}.000Z`;
  const pending = [1, 2, 3].map((s) => newExecution("aut_x", `evt_p${s}`, { trigger: {} }, STEPS, at(s)));
  const lapsed = [4, 5].map((s) => newExecution("aut_x", `evt_l${s}`, { trigger: {} }, STEPS, at(s), "2026-01-01T00:09:00.000Z"));
  const held = newExecution("aut_x", "evt_h", { trigger: {} }, STEPS, at(0), "2026-01-01T00:20:00.000Z");
  await fresh.storage.db.insertInto("automation_executions").values([...pending, ...lapsed, held]).execute();

  const first = await claimExecutions(fresh.storage, NOW, LEASE, 3);
  expect(first.map((e) => e.id)).toEqual([pending[0]!.id, lapsed[0]!.id, lapsed[1]!.id]);
  expect(first.map((e) => [e.state, e.lease_until, e.attempts])).toEqual([
    ["AUTOMATION_EXECUTION_STATE_RUNNING", LEASE, 1],
    ["AUTOMATION_EXECUTION_STATE_RUNNING", LEASE, 2],
    ["AUTOMATION_EXECUTION_STATE_RUNNING", LEASE, 2],
  ]);
  const rest = await claimExecutions(fresh.storage, NOW, LEASE, 10);
  expect(rest.map((e) => e.id)).toEqual([pending[1]!.id, pending[2]!.id]);
  expect(await claimExecutions(fresh.storage, NOW, LEASE, 10)).toEqual([]);
});
