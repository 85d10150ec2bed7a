// Claims fair across automations, on the test database's dialect (TEST_DATABASE): PostgreSQL's
// claim_executions function and SQLite's seeks choose alike. A claim takes lapsed runs first, then
// parked executions that are due (half of what is left at most, while pending ones wait), then
// pending ones shared among the automations that have any, in turn from the one after the last
// claim's, then due parked ones for what is still left; never a parked one before it is due.
import { expect, it } from "vitest";
import { claimExecutions, countRunnable, turnAfter } from "../../src/automations/execution-claims.js";
import { newExecution } from "../../src/automations/executions.js";
import type { AutomationExecutionsTable } from "../../src/storage/schema.js";
import { freshStorageEachTest } from "../support/storage.js";

const fresh = freshStorageEachTest("tenant-api-fair-claims");

const STEPS = JSON.stringify([{ stepName: "a", evaluateExpressions: { expressions: [] } }]);
const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const NOW = new Date(T0 + 3_600_000).toISOString();
const LEASE = new Date(T0 + 3_660_000).toISOString();

let n = 0;
const at = () => new Date(T0 + 1000 * n++).toISOString();
const pending = (automation: string, count: number) => Array.from({ length: count }, () => newExecution(automation, `evt_${n}`, { trigger: {} }, STEPS, at()));
const parked = (automation: string, due: string): AutomationExecutionsTable => ({ ...newExecution(automation, `evt_${n}`, { trigger: {} }, STEPS, at()), state: "AUTOMATION_EXECUTION_STATE_PARKED", next_attempt_at: due });
const insert = (rows: AutomationExecutionsTable[]) => fresh.storage.db.insertInto("automation_executions").values(rows).execute();
const claim = (limit: number, after = "") => claimExecutions(fresh.storage, NOW, LEASE, limit, after);
const byAutomation = (rows: AutomationExecutionsTable[]) => rows.reduce<Record<string, number>>((c, r) => ({ ...c, [r.automation_id]: (c[r.automation_id] ?? 0) + 1 }), {});

it("a backlog of one automation does not keep another's fresh executions out of a claim", async () => {
  await insert(pending("aut_a", 500));
  await insert(pending("aut_b", 1));
  const claimed = await claim(32);
  expect(byAutomation(claimed)).toEqual({ aut_a: 31, aut_b: 1 });
  // The oldest of each, leased.
  for (const e of claimed) expect(e).toMatchObject({ state: "AUTOMATION_EXECUTION_STATE_RUNNING", lease_until: LEASE, attempts: 1 });
});

it("shares a claim among the automations in turn, each claim beginning after the automation the one before ended with", async () => {
  for (const a of ["aut_a", "aut_b", "aut_c", "aut_d"]) await insert(pending(a, 10));
  let turn = "";
  const seen: string[][] = [];
  for (let i = 0; i < 4; i++) {
    const claimed = await claim(2, turn);
    seen.push(Object.keys(byAutomation(claimed)).sort());
    turn = turnAfter(claimed, turn);
  }
  expect(seen).toEqual([
    ["aut_a", "aut_b"],
    ["aut_c", "aut_d"],
    ["aut_a", "aut_b"],
    ["aut_c", "aut_d"],
  ]);
  expect(turn).toBe("aut_d");
});

it("due parked executions take half of a claim at most while pending ones wait, and the rest when none does; never one not yet due", async () => {
  await insert(Array.from({ length: 10 }, () => parked("aut_p", new Date(T0).toISOString())));
  await insert([parked("aut_p", "2099-01-01T00:00:00.000Z")]);
  await insert(pending("aut_q", 10));
  const mixed = await claim(8);
  expect(byAutomation(mixed)).toEqual({ aut_p: 4, aut_q: 4 });
  // Claimed from parking: its next_attempt_at kept (the claim's turn ignores it), shown running.
  expect(mixed.filter((e) => e.automation_id === "aut_p").every((e) => e.state === "AUTOMATION_EXECUTION_STATE_RUNNING" && e.next_attempt_at !== null)).toBe(true);
  expect(turnAfter(mixed, "")).toBe("aut_q");
  await fresh.storage.db.deleteFrom("automation_executions").where("automation_id", "=", "aut_q").execute();
  const rest = await claim(32);
  expect(byAutomation(rest)).toEqual({ aut_p: 6 });
  expect(await countRunnable(fresh.storage.db, NOW, 100)).toBe(0);
});

it("runs whose lease lapsed come first, oldest first", async () => {
  await insert(pending("aut_a", 3));
  const lapsed = newExecution("aut_z", "evt_lapsed", { trigger: {} }, STEPS, at(), new Date(T0).toISOString());
  await insert([lapsed]);
  const claimed = await claim(1);
  expect(claimed.map((e) => e.id)).toEqual([lapsed.id]);
  expect(claimed[0]!.attempts).toBe(2);
  expect(turnAfter(claimed, "aut_q")).toBe("aut_q");
});
