// Executions started again by an administrator: Redrive runs a failed execution again, Replay an
// event of an automation's delivery log. Either is a new execution of the automation's steps as
// they are now, over the event's body as an execution kept it, recorded in one transaction with the
// request's kept answer and handed to this process's worker once committed. Bounds: a failed
// execution is redriven at most once, an event has at most one replay pending or running.
// docs/automations.md, "Redrive and replay".
import { sql } from "kysely";
import type { OperationId } from "../../generated/server.js";
import { recordAudit } from "../audit/audit-record.js";
import { executionTarget } from "../audit/change.js";
import type { Origin } from "../core/origin.js";
import type { Clock } from "../core/clock.js";
import { failedPrecondition, notFound } from "../core/errors.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import { writeTransaction, type BeforeCommit, type Db } from "../storage/transactions.js";
import type { ExecutionHandOff, WebhookEvents } from "../webhooks/for-automations.js";
import { automationNotFound, lockKey as automationLock } from "./automations.js";
import { ExecutionOrigin, ExecutionState, executionNotFound, toExecution, type AutomationExecution } from "./executions.js";
import { publishedSteps, redriveLock, redriveSource, rerunRow, type RerunSource } from "./rerun-rows.js";

/** A rerun's request: its operation (as audited), its kept answer, and who asked for it. */
interface Rerun {
  operation: OperationId;
  beforeCommit: BeforeCommit<AutomationExecution> | undefined;
  origin: Origin | undefined;
}

export class ExecutionReruns {
  constructor(private readonly deps: { storage: Storage; clock: Clock; events: WebhookEvents; handOff: ExecutionHandOff }) {}

  /** A new execution of the failed execution `executionId`'s event, with its automation's current steps. */
  async redrive(executionId: string, beforeCommit?: BeforeCommit<AutomationExecution>, origin?: Origin): Promise<AutomationExecution> {
    const found = await this.deps.storage.db.selectFrom("automation_executions").select("automation_id").where("id", "=", executionId).executeTakeFirst();
    if (!found) throw executionNotFound(executionId);
    const operation = "svc.api.automations.v1.AutomationExecutionService.Redrive";
    return this.record(found.automation_id, redriveLock(executionId), { operation, beforeCommit, origin }, async (db) => {
      const failed = await db.selectFrom("automation_executions").select(["id", "state", "event_id", "context", "depth"]).where("id", "=", executionId).executeTakeFirst();
      // Removed by retention since the read above.
      if (!failed) throw executionNotFound(executionId);
      if (failed.state !== ExecutionState.ERROR) {
        throw failedPrecondition("EXECUTION_NOT_FAILED", "only a failed execution (AUTOMATION_EXECUTION_STATE_ERROR) can be redriven", { metadata: { state: failed.state } });
      }
      const redrive = await db.selectFrom("automation_executions").select("id").where("redrive_of", "=", executionId).executeTakeFirst();
      if (redrive) {
        throw failedPrecondition("EXECUTION_ALREADY_REDRIVEN", "this execution was redriven already; redrive that execution if it failed too", { metadata: { redrivenBy: redrive.id } });
      }
      return redriveSource(failed);
    });
  }

  /** A new execution of event `eventId` of the automation's delivery log, with the automation's current steps. */
  async replay(automationId: string, eventId: string, beforeCommit?: BeforeCommit<AutomationExecution>, origin?: Origin): Promise<AutomationExecution> {
    const automation = await this.deps.storage.db.selectFrom("automations").select("id").where("id", "=", automationId).executeTakeFirst();
    if (!automation) throw automationNotFound(automationId);
    // Event ids compare case-insensitively; the log holds them lowercase.
    // Another sender's ids are kept as received; an hmac or jwt listener's UUIDs lowercased.
    const event = (await this.deps.events.find(automationId, eventId)) ?? (await this.deps.events.find(automationId, eventId.toLowerCase()));
    if (!event) {
      throw notFound("WEBHOOK_EVENT_NOT_FOUND", "the automation's delivery log has no event with this id (unknown, or past its 7-day retention)", { metadata: { eventId } });
    }
    const operation = "svc.api.automations.v1.WebhookEventService.Replay";
    return this.record(automationId, `automation_executions:replay:${automationId}:${event.event_id}`, { operation, beforeCommit, origin }, async (db) => {
      const kept = event.execution_id === null ? undefined : await db.selectFrom("automation_executions").select("context").where("id", "=", event.execution_id).executeTakeFirst();
      if (!kept) {
        throw failedPrecondition("EVENT_BODY_NOT_KEPT", "the event's body is not kept: the event did not run its automation, or the execution that kept its body is past its retention", {
          metadata: { eventId: event.event_id },
        });
      }
      // A seek in the partial index of replays (its predicate written as a literal, for SQLite to use it).
      const live = await db
        .selectFrom("automation_executions")
        .select("id")
        .where("automation_id", "=", automationId)
        .where("event_id", "=", event.event_id)
        .where(sql<boolean>`origin = ${sql.lit(ExecutionOrigin.REPLAY)}`)
        .where("state", "in", [ExecutionState.PENDING, ExecutionState.RUNNING, ExecutionState.PARKED])
        .executeTakeFirst();
      if (live) {
        throw failedPrecondition("REPLAY_IN_PROGRESS", "a replay of this event is still pending, running or parked; replay it again once that one has finished", {
          metadata: { automationExecutionId: live.id },
        });
      }
      // A delivery-log event is a webhook's: it starts a chain of fund events.
      return { eventId: event.event_id, context: kept.context, origin: ExecutionOrigin.REPLAY, redriveOf: null, depth: 0 };
    });
  }

  /**
   * Records the rerun `source` finds (under `key`, its own lock, and the automation's shared lock, so
   * that the steps are those of the automation's last committed change) with `beforeCommit`, then
   * hands it to the worker, audited as `made.operation`. The automation must exist and be published.
   */
  private async record(automationId: string, key: string, made: Rerun, source: (db: Db) => Promise<RerunSource>): Promise<AutomationExecution> {
    const { beforeCommit, origin } = made;
    const { storage, clock, handOff } = this.deps;
    let execution: AutomationExecutionsTable | undefined;
    try {
      const recorded = await writeTransaction(storage, { exclusive: [key], shared: [automationLock(automationId)] }, async (db) => {
        const from = await source(db);
        const steps = await publishedSteps(db, automationId);
        const now = clock.now();
        const at = new Date(now).toISOString();
        execution = rerunRow(from, (eventId, context) => handOff.newExecution(automationId, eventId, context, steps, at, origin));
        await db.insertInto("automation_executions").values(execution).execute();
        const view = toExecution({ ...execution, redriven_by: null });
        await recordAudit(db, origin, now, { operationId: made.operation, target: executionTarget(execution.id), before: null, after: view });
        await beforeCommit?.(db, view);
        return view;
      }, { origin });
      handOff.recorded(execution!);
      return recorded;
    } catch (e) {
      if (execution) handOff.notRecorded(execution);
      throw e;
    }
  }
}
