// Recording an accepted webhook event and the execution it starts, atomically, where the dialects
// differ. The event's record is the idempotency key: inserted, or replacing a record past
// retention; a live record (a duplicate, or a concurrent delivery that committed first) makes the
// whole write a no-op. On PostgreSQL one statement (the claim in a data-modifying CTE, the
// execution inserted from its result), one round trip instead of four; on SQLite a write
// transaction of the group commit. Why: docs/benchmarks.md, "What the profiles led to".
import { sql, type QueryCreator } from "kysely";
import type { Origin } from "../core/origin.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import type { AutomationExecutionsTable, Database, WebhookEventsTable } from "../storage/schema.js";
import { inTransactionSpan, writeTransaction } from "../storage/transactions.js";

type Claim = WebhookEventsTable & { retained: string };

const claimQuery = (db: QueryCreator<Database>, v: Claim) =>
  db
    .insertInto("webhook_events")
    .values({
      listener_id: v.listener_id,
      event_id: v.event_id,
      event_type: v.event_type ?? null,
      automation_id: v.automation_id,
      received_at: v.received_at,
      outcome: v.outcome,
      not_run_reason: v.not_run_reason,
      execution_id: v.execution_id,
    })
    .onConflict((oc) =>
      oc
        .columns(["listener_id", "event_id"])
        .doUpdateSet((eb) => ({
          event_type: eb.ref("excluded.event_type"),
          automation_id: eb.ref("excluded.automation_id"),
          received_at: eb.ref("excluded.received_at"),
          outcome: eb.ref("excluded.outcome"),
          not_run_reason: eb.ref("excluded.not_run_reason"),
          execution_id: eb.ref("excluded.execution_id"),
        }))
        .where("webhook_events.received_at", "<=", v.retained),
    );

const claimStatement = prepared(claimQuery);

const insertExecution = prepared((db, v: AutomationExecutionsTable) =>
  db.insertInto("automation_executions").values({
    id: v.id,
    automation_id: v.automation_id,
    event_id: v.event_id,
    state: v.state,
    context: v.context,
    steps: v.steps,
    step_results: v.step_results,
    created_at: v.created_at,
    completed_at: v.completed_at,
    lease_until: v.lease_until,
    attempts: v.attempts,
    trace_parent: v.trace_parent,
  }),
);

/**
 * The execution's columns selected from the claim's result (no row: nothing inserted). Its event
 * and automation ids are the event's own values. Parameters in a select list are text to
 * PostgreSQL, hence the cast of the one integer.
 */
const claimWithExecution = prepared((db, v: Claim & Omit<AutomationExecutionsTable, "event_id" | "automation_id">) =>
  db
    .with("claimed", (qc) => claimQuery(qc, v).returning(["event_id", "automation_id"]))
    .insertInto("automation_executions")
    .columns(["id", "automation_id", "event_id", "state", "context", "steps", "step_results", "created_at", "completed_at", "lease_until", "attempts", "trace_parent"])
    .expression((eb) =>
      eb
        .selectFrom("claimed")
        .select((s) => [
          s.val(v.id).as("id"),
          "claimed.automation_id",
          "claimed.event_id",
          s.val(v.state).as("state"),
          s.val(v.context).as("context"),
          s.val(v.steps).as("steps"),
          s.val(v.step_results).as("step_results"),
          s.val(v.created_at).as("created_at"),
          s.val(v.completed_at).as("completed_at"),
          s.val(v.lease_until).as("lease_until"),
          sql<number>`cast(${v.attempts} as integer)`.as("attempts"),
          s.val(v.trace_parent).as("trace_parent"),
        ]),
    ),
);

/**
 * Records `event` (a record received at or before `retainedSince` no longer counts) and, with it,
 * `execution`. False, and nothing written, when the event id is live on its listener already.
 */
export async function recordEvent(storage: Storage, event: WebhookEventsTable, retainedSince: string, execution?: AutomationExecutionsTable, origin?: Origin): Promise<boolean> {
  const claim: Claim = { ...event, retained: retainedSince };
  if (storage.dialect === "postgres") {
    if (!execution) return affected(await inTransactionSpan(storage, origin, () => claimStatement.execute(storage.db, claim))) === 1;
    const { event_id: _event, automation_id: _automation, ...rest } = execution;
    return affected(await inTransactionSpan(storage, origin, () => claimWithExecution.execute(storage.db, { ...claim, ...rest }))) === 1;
  }
  // No lock: two deliveries of one event id meet on the primary key of webhook_events.
  return writeTransaction(storage, { exclusive: [] }, async (db) => {
    if (affected(await claimStatement.execute(db, claim)) !== 1) return false;
    if (execution) await insertExecution.execute(db, execution);
    return true;
  }, { origin });
}

const seenStatement = prepared((db, v: { listenerId: string; eventId: string; since: string }) =>
  db.selectFrom("webhook_events").select("event_id").where("listener_id", "=", v.listenerId).where("event_id", "=", v.eventId).where("received_at", ">", v.since),
);

/**
 * Whether the event id is live on the listener (received after `since`): on SQLite most duplicates
 * are answered by this read before the record, a write transaction. Always false on PostgreSQL, where
 * `recordEvent` settles it: there a duplicate's record changes nothing and costs a round trip like
 * the read, which would only add one to every accepted event.
 */
export async function seenBeforeRecord(storage: Storage, listenerId: string, eventId: string, since: string): Promise<boolean> {
  if (storage.dialect === "postgres") return false;
  return (await seenStatement.execute(storage.db, { listenerId, eventId, since })).rows.length > 0;
}

const affected = (r: { numAffectedRows: bigint | undefined }) => Number(r.numAffectedRows ?? 0);
