// Automation executions: made by the intake and recorded with their webhook event, listed and
// fetched for administrators, and claimed and updated by the worker.
import { sql } from "kysely";
import type { components } from "../../generated/api.js";
import type { KnownAutomationExecutionOrigin, KnownAutomationExecutionState, KnownStepState } from "../../generated/enums.js";
import { notFound } from "../core/errors.js";
import { timeOrderedId } from "../core/ids.js";
import type { Origin } from "../core/origin.js";
import { pageSize, servedWithin, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import type { WebhookDelivery } from "../webhooks/for-automations.js";
import type { AutomationStep } from "./automation-input.js";
import { MAX_STORED_STEP_RESULTS_CHARS } from "./resource-budget.js";

export type AutomationExecution = components["schemas"]["AutomationExecution"];
export type StepResult = components["schemas"]["StepResult"];

export const ExecutionState = {
  PENDING: "AUTOMATION_EXECUTION_STATE_PENDING",
  RUNNING: "AUTOMATION_EXECUTION_STATE_RUNNING",
  PARKED: "AUTOMATION_EXECUTION_STATE_PARKED",
  DONE: "AUTOMATION_EXECUTION_STATE_DONE",
  ERROR: "AUTOMATION_EXECUTION_STATE_ERROR",
} as const satisfies Record<string, KnownAutomationExecutionState>;

export const ExecutionOrigin = {
  TRIGGER: "AUTOMATION_EXECUTION_ORIGIN_TRIGGER",
  REDRIVE: "AUTOMATION_EXECUTION_ORIGIN_REDRIVE",
  REPLAY: "AUTOMATION_EXECUTION_ORIGIN_REPLAY",
} as const satisfies Record<string, KnownAutomationExecutionOrigin>;

export const StepState = {
  UNSPECIFIED: "STEP_STATE_UNSPECIFIED",
  PENDING: "STEP_STATE_PENDING",
  DONE: "STEP_STATE_DONE",
  SKIPPED: "STEP_STATE_SKIPPED",
  ERROR: "STEP_STATE_ERROR",
} as const satisfies Record<string, KnownStepState>;

/**
 * An execution as it is read for answers. Step results longer than the size bounds allow (stored
 * by a version before them) stay in the database: `step_results` is null, so that no answer holds
 * or serializes them.
 */
type ExecutionRow = Pick<AutomationExecutionsTable, "id" | "automation_id" | "event_id" | "state" | "context" | "steps" | "created_at" | "completed_at" | "origin" | "redrive_of" | "next_attempt_at"> & {
  step_results: string | null;
  /** The execution that redrives this one, if any. */
  redriven_by: string | null;
};

const WITHHELD_RESULTS = `withheld: this execution's step results take more than ${MAX_STORED_STEP_RESULTS_CHARS} characters as stored (recorded before automations had size bounds)`;

/** Each step by name, state unknown, in place of step results too large to answer. */
function withheldResults(stepsJson: string): StepResult[] {
  const steps = JSON.parse(stepsJson) as AutomationStep[];
  return steps.map((s) => ({ stepName: s.stepName, state: StepState.UNSPECIFIED, output: null, error: WITHHELD_RESULTS }));
}

export const toExecution = (row: ExecutionRow): AutomationExecution => ({
  id: row.id,
  automationId: row.automation_id,
  state: row.state,
  context: contextView(row.context),
  eventId: row.event_id,
  origin: row.origin ?? ExecutionOrigin.TRIGGER,
  redriveOf: row.redrive_of ?? null,
  redrivenBy: row.redriven_by,
  stepResults: row.step_results === null ? withheldResults(row.steps) : (JSON.parse(row.step_results) as StepResult[]),
  createdAt: row.created_at,
  completedAt: row.completed_at,
  // Kept through the claim that ends the parking (execution-claims.ts): shown while parked only.
  nextAttemptAt: row.state === ExecutionState.PARKED ? (row.next_attempt_at ?? null) : null,
});

/** Step results only within the bounds (the length check runs in the database). */
const answeredResults = sql<string | null>`case when length(step_results) <= ${sql.lit(MAX_STORED_STEP_RESULTS_CHARS)} then step_results end`;

/** The columns of an answer; its redrive is one seek in the unique index of `redrive_of`. */
function selectExecutions(storage: Storage) {
  return storage.db
    .selectFrom("automation_executions")
    .select(["id", "automation_id", "event_id", "state", "context", "steps", "created_at", "completed_at", "origin", "redrive_of", "next_attempt_at"])
    .select(answeredResults.as("step_results"))
    .select((eb) =>
      eb
        .selectFrom("automation_executions as redrive")
        .select("redrive.id")
        .whereRef("redrive.redrive_of", "=", "automation_executions.id")
        .as("redriven_by"),
    );
}

/** What an execution runs over, stored as its `context`: `ctx.trigger`, and `ctx.webhook` for a webhook event's. */
export interface ExecutionContext {
  trigger: unknown;
  webhook?: WebhookDelivery;
}

/**
 * A new execution of the automation's steps (`stepsJson`, as stored on the automation and copied as
 * it is) over `context`, created `at` (ISO): pending, or with `leaseUntil` already claimed (running)
 * by the worker that will be handed it. The intake records it with its event
 * (webhooks/event-record.ts). `origin` is the request that accepted the event.
 */
export function newExecution(automationId: string, eventId: string, context: ExecutionContext, stepsJson: string, at: string, leaseUntil?: string, origin?: Origin): AutomationExecutionsTable {
  const steps = JSON.parse(stepsJson) as AutomationStep[];
  const results: StepResult[] = steps.map((s) => ({ stepName: s.stepName, state: StepState.PENDING, output: null, error: null }));
  return {
    // Ordered by creation: the intake's inserts append to the primary key index (see ids.ts).
    id: `exe_${timeOrderedId(Date.parse(at), 8)}`,
    automation_id: automationId,
    event_id: eventId,
    state: leaseUntil ? ExecutionState.RUNNING : ExecutionState.PENDING,
    context: JSON.stringify(context),
    steps: stepsJson,
    step_results: JSON.stringify(results),
    created_at: at,
    completed_at: null,
    lease_until: leaseUntil ?? null,
    attempts: leaseUntil ? 1 : 0,
    // The accepting request's trace goes with the event to whichever worker runs it.
    trace_parent: origin?.span?.traceparent() ?? null,
  };
}

/** The stored context as answered: `webhook` null for a fund event's execution. */
function contextView(stored: string): AutomationExecution["context"] {
  const { trigger, webhook } = JSON.parse(stored) as ExecutionContext;
  return { trigger: trigger as AutomationExecution["context"]["trigger"], webhook: webhook ?? null };
}

export const executionNotFound = (id: string) => notFound("EXECUTION_NOT_FOUND", "no automation execution with this id", { metadata: { executionId: id } });

export class Executions {
  constructor(
    private readonly storage: Storage,
    private readonly pageTokens: PageTokens,
  ) {}

  async get(id: string): Promise<AutomationExecution> {
    const row = await selectExecutions(this.storage).where("id", "=", id).executeTakeFirst();
    if (!row) throw executionNotFound(id);
    return toExecution(row);
  }

  /** Newest first (createdAt descending, then id descending), optionally for one automation. */
  async list(automationId: string | undefined, size: number | undefined, token: string | undefined): Promise<Page<AutomationExecution>> {
    const scope = `executions:${automationId ?? "*"}`;
    const after = this.pageTokens.decode(scope, token, "query.page_token", 2);
    const limit = pageSize(size);
    // The page's keys and sizes first, then only the executions that fit (PAGE_STORED_CHARS_MAX).
    let keys = this.storage.db
      .selectFrom("automation_executions")
      .select(["id", "created_at"])
      .select(sql<number>`length(context) + length(steps) + coalesce(length(${answeredResults}), 0)`.as("stored"))
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(limit + 1);
    if (automationId) keys = keys.where("automation_id", "=", automationId);
    if (after) {
      const [at, id] = after.map(String) as [string, string];
      keys = keys.where((eb) => eb.or([eb("created_at", "<", at), eb.and([eb("created_at", "=", at), eb("id", "<", id)])]));
    }
    const found = await keys.execute();
    const served = found.slice(0, servedWithin(found.map((k) => Number(k.stored)), limit));
    const rows = served.length === 0 ? [] : await selectExecutions(this.storage).where("id", "in", served.map((k) => k.id)).execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    const last = served[served.length - 1];
    return {
      // An execution deleted between the two reads is left out; the token still continues after it.
      items: served.flatMap((k) => byId.get(k.id) ?? []).map(toExecution),
      nextPageToken: found.length > served.length && last ? this.pageTokens.encode(scope, [last.created_at, last.id]) : "",
    };
  }
}
