// Automation executions: created with their webhook event (in the intake's transaction), listed and
// fetched for administrators, and claimed and updated by the worker.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { notFound } from "../core/errors.js";
import { base62 } from "../core/ids.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import type { Db } from "../storage/transactions.js";
import type { AutomationStep } from "./automation-input.js";

export type AutomationExecution = components["schemas"]["AutomationExecution"];
export type StepResult = components["schemas"]["StepResult"];

export const ExecutionState = {
  PENDING: "AUTOMATION_EXECUTION_STATE_PENDING",
  RUNNING: "AUTOMATION_EXECUTION_STATE_RUNNING",
  DONE: "AUTOMATION_EXECUTION_STATE_DONE",
  ERROR: "AUTOMATION_EXECUTION_STATE_ERROR",
} as const;

export const StepState = {
  PENDING: "STEP_STATE_PENDING",
  DONE: "STEP_STATE_DONE",
  SKIPPED: "STEP_STATE_SKIPPED",
  ERROR: "STEP_STATE_ERROR",
} as const;

export const toExecution = (row: AutomationExecutionsTable): AutomationExecution => ({
  id: row.id,
  automationId: row.automation_id,
  state: row.state,
  context: JSON.parse(row.context) as AutomationExecution["context"],
  eventId: row.event_id,
  stepResults: JSON.parse(row.step_results) as StepResult[],
  createdAt: row.created_at,
  completedAt: row.completed_at,
});

export class Executions {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly pageTokens: PageTokens,
  ) {}

  /** A pending execution of `steps` over `trigger`, inside the caller's transaction. */
  async enqueue(db: Db, automationId: string, eventId: string, trigger: unknown, steps: readonly AutomationStep[]): Promise<string> {
    const id = `exe_${base62(16)}`;
    const results: StepResult[] = steps.map((s) => ({ stepName: s.stepName, state: StepState.PENDING, output: null, error: null }));
    await db
      .insertInto("automation_executions")
      .values({
        id,
        automation_id: automationId,
        event_id: eventId,
        state: ExecutionState.PENDING,
        context: JSON.stringify({ trigger }),
        steps: JSON.stringify(steps),
        step_results: JSON.stringify(results),
        created_at: new Date(this.clock.now()).toISOString(),
        completed_at: null,
        lease_until: null,
        attempts: 0,
      })
      .execute();
    return id;
  }

  async get(id: string): Promise<AutomationExecution> {
    const row = await this.storage.db.selectFrom("automation_executions").selectAll().where("id", "=", id).executeTakeFirst();
    if (!row) throw notFound("EXECUTION_NOT_FOUND", "no automation execution with this id", { metadata: { executionId: id } });
    return toExecution(row);
  }

  /** Newest first (createdAt descending, then id descending), optionally for one automation. */
  async list(automationId: string | undefined, size: number | undefined, token: string | undefined): Promise<Page<AutomationExecution>> {
    const scope = `executions:${automationId ?? "*"}`;
    const after = this.pageTokens.decode(scope, token, "query.page_token", 2);
    const limit = pageSize(size);
    let query = this.storage.db.selectFrom("automation_executions").selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(limit + 1);
    if (automationId) query = query.where("automation_id", "=", automationId);
    if (after) {
      const [at, id] = after.map(String) as [string, string];
      query = query.where((eb) => eb.or([eb("created_at", "<", at), eb.and([eb("created_at", "=", at), eb("id", "<", id)])]));
    }
    return this.pageTokens.page(scope, await query.execute(), limit, (r) => [r.created_at, r.id], toExecution);
  }
}
