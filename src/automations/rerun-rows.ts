// What a rerun is made of, shared by the single reruns (reruns.ts) and the bulk redrive
// (bulk-redrive.ts): the automation it runs (published, its current steps), the source it runs
// again (a failed execution, or an event's kept body) and the new execution's row, linked to it.
// docs/automations.md, "Redrive and replay".
import { failedPrecondition } from "../core/errors.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import type { Db } from "../storage/transactions.js";
import { automationNotFound } from "./automations.js";
import { ExecutionOrigin, type ExecutionContext } from "./executions.js";

/** What a rerun runs again: the event and its body as an execution kept them, and how it is linked. */
export interface RerunSource {
  eventId: string | null;
  /** `{ trigger, webhook }` as stored. */
  context: string;
  origin: (typeof ExecutionOrigin)["REDRIVE" | "REPLAY"];
  redriveOf: string | null;
  /** How many fund events led to the source's event (fund-triggers.ts): a redrive of a fund event's execution counts toward the same bound. */
  depth: number;
}

/** The lock a redrive of `executionId` holds: requests racing on one failed execution are serialized by it. */
export const redriveLock = (executionId: string) => `automation_executions:redrive:${executionId}`;

/** A redrive of the failed execution `failed`: the same event and body, one more link in its chain. */
export const redriveSource = (failed: Pick<AutomationExecutionsTable, "id" | "event_id" | "context"> & { depth?: number | null }): RerunSource => ({
  eventId: failed.event_id,
  context: failed.context,
  origin: ExecutionOrigin.REDRIVE,
  redriveOf: failed.id,
  depth: failed.depth ?? 0,
});

/** The automation's steps as stored, read in the rerun's transaction: it must exist and be published. */
export async function publishedSteps(db: Db, automationId: string): Promise<string> {
  const automation = await db.selectFrom("automations").select(["steps", "is_draft"]).where("id", "=", automationId).executeTakeFirst();
  if (!automation) throw automationNotFound(automationId);
  if (automation.is_draft === 1) {
    throw failedPrecondition("AUTOMATION_IS_DRAFT", "the automation is a draft (not published): publish it to run its steps", { metadata: { automationId } });
  }
  return automation.steps;
}

/**
 * The row of a rerun of `from`: `make` answers a new execution over the source's event id and
 * context (executions.ts `newExecution`, or the worker hand-off's), which is then linked to it.
 */
export function rerunRow(from: RerunSource, make: (eventId: string, context: ExecutionContext) => AutomationExecutionsTable): AutomationExecutionsTable {
  // The hand-off's executions are a webhook event's; a rerun keeps its source's event id and delivery as they are.
  return { ...make(from.eventId ?? "", JSON.parse(from.context) as ExecutionContext), event_id: from.eventId, origin: from.origin, redrive_of: from.redriveOf, depth: from.depth };
}
