// An audit event as it is recorded: built by the service that makes a change, inside its
// transaction, and inserted there, so the change and its record commit or roll back together.
import type { Actor, Origin } from "../core/origin.js";
import type { AuditEventsTable } from "../storage/schema.js";
import type { Db } from "../storage/transactions.js";
import { newAuditId } from "./audit-ids.js";
import type { Change } from "./change.js";

const json = (state: unknown): string | null => (state === null || state === undefined ? null : JSON.stringify(state));

const who = (actor: Actor) =>
  actor.kind === "user"
    ? { actor_kind: "USER", actor_user_id: actor.userId, actor_credential_id: actor.credentialId, actor_automation_id: "", actor_execution_id: "", actor_event_id: "", request_id: actor.requestId }
    : { actor_kind: "AUTOMATION_EXECUTION", actor_user_id: "", actor_credential_id: "", actor_automation_id: actor.automationId, actor_execution_id: actor.executionId, actor_event_id: actor.eventId, request_id: "" };

/**
 * The row recording `change` at `now` (ms), or null when there is nothing to record: no actor (a
 * change no caller asked for), or a change that left the target as it was.
 */
export function auditRow(origin: Origin | undefined, now: number, change: Change): AuditEventsTable | null {
  const actor = origin?.actor;
  const before = json(change.before);
  const after = json(change.after);
  if (!actor || before === after) return null;
  return {
    id: newAuditId(now),
    operation_id: change.operationId,
    target_kind: change.target.kind,
    target_id: change.target.id,
    target_user_id: change.target.userId ?? "",
    target_app_id: change.target.appId ?? "",
    ...who(actor),
    before_state: before,
    after_state: after,
    created_at: new Date(now).toISOString(),
  };
}

/**
 * Inserts `row` (from auditRow) in the transaction `db` of its change, into the inbox: on SQLite a
 * table the server moves into the trail in batches (./audit-inbox.ts), on PostgreSQL the trail itself.
 */
export async function insertAudit(db: Db, row: AuditEventsTable | null): Promise<void> {
  if (row) await db.insertInto("audit_inbox").values(row).execute();
}

/** Records `change` in the transaction `db` that makes it. */
export function recordAudit(db: Db, origin: Origin | undefined, now: number, change: Change): Promise<void> {
  return insertAudit(db, auditRow(origin, now, change));
}
