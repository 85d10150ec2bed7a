// Records a change in the transaction that makes it, so the two commit or roll back together.
import type { Clock } from "../core/clock.js";
import type { Db } from "../storage/transactions.js";
import type { Actor } from "./actor.js";
import { newAuditId } from "./audit-ids.js";
import type { Change } from "./change.js";

const NONE = { user: "", credential: "", automation: "", execution: "", event: "", request: "" };

/**
 * Inserts the audit event of `change` made by `actor`, unless it changed nothing (a request that
 * leaves the target as it was records nothing). Returns whether it recorded one.
 */
export async function recordChange(db: Db, clock: Clock, actor: Actor, change: Change): Promise<boolean> {
  const before = change.before === null || change.before === undefined ? null : JSON.stringify(change.before);
  const after = change.after === null || change.after === undefined ? null : JSON.stringify(change.after);
  if (before === after) return false;
  const now = clock.now();
  const who =
    actor.kind === "user"
      ? { ...NONE, user: actor.userId, credential: actor.credentialId, request: actor.requestId }
      : { ...NONE, automation: actor.automationId, execution: actor.executionId, event: actor.eventId };
  await db
    .insertInto("audit_events")
    .values({
      id: newAuditId(now),
      operation_id: change.operationId,
      target_kind: change.target.kind,
      target_id: change.target.id,
      target_user_id: change.target.userId ?? "",
      target_app_id: change.target.appId ?? "",
      actor_kind: actor.kind === "user" ? "USER" : "AUTOMATION_EXECUTION",
      actor_user_id: who.user,
      actor_credential_id: who.credential,
      actor_automation_id: who.automation,
      actor_execution_id: who.execution,
      actor_event_id: who.event,
      request_id: who.request,
      before_state: before,
      after_state: after,
      created_at: new Date(now).toISOString(),
    })
    .execute();
  return true;
}
