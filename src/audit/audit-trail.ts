// AuditService.List: the audit trail newest first (id descending: ids are time-ordered), filtered
// by target, actor, operation and time range, within what the caller may see. Keyset pages whose
// tokens are bound to the caller and the filters.
import { sql, type SelectQueryBuilder } from "kysely";
import type { components } from "../../generated/api.js";
import { invalidField, permissionDenied } from "../core/errors.js";
import { pageSize, servedWithin, type Page, type PageTokens } from "../core/pagination.js";
import { parseTimestamp } from "../core/timestamp.js";
import type { Storage } from "../storage/connect.js";
import type { AuditEventsTable, Database } from "../storage/schema.js";
import { firstAuditIdAt } from "./audit-ids.js";
import type { TargetKind } from "./change.js";

export type AuditEvent = components["schemas"]["AuditEvent"];

/** What a caller may see: everything (super admin), the fund's targets (fund admin), or the events on their own limit rows (a user). */
export type AuditAccess = { kind: "all" } | { kind: "funds" } | { kind: "subject"; userId: string };

const FUND_TARGETS: readonly TargetKind[] = ["AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT", "AUDIT_TARGET_KIND_APP_CAP", "AUDIT_TARGET_KIND_FUND_POLICY"];

export interface AuditQuery {
  target_kind?: string | undefined;
  target_id?: string | undefined;
  user_id?: string | undefined;
  app_id?: string | undefined;
  actor_user_id?: string | undefined;
  actor_execution_id?: string | undefined;
  operation_id?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  page_size?: number | undefined;
  page_token?: string | undefined;
}

const firstIdAt = (iso: string): string => firstAuditIdAt(Date.parse(iso));

function targetKind(kind: string | undefined): TargetKind | undefined {
  if (kind === "AUDIT_TARGET_KIND_UNSPECIFIED") throw invalidField("query.target_kind", "must be a kind other than AUDIT_TARGET_KIND_UNSPECIFIED");
  return kind as TargetKind | undefined;
}

export function toAuditEvent(row: AuditEventsTable): AuditEvent {
  const actor = row.actor_kind === "USER" ? "AUDIT_ACTOR_KIND_USER" : "AUDIT_ACTOR_KIND_AUTOMATION_EXECUTION";
  return {
    id: row.id,
    operationId: row.operation_id,
    target: { kind: row.target_kind as TargetKind, id: row.target_id, userId: row.target_user_id, appId: row.target_app_id },
    actor: {
      kind: actor,
      userId: row.actor_user_id,
      credentialId: row.actor_credential_id,
      automationId: row.actor_automation_id,
      executionId: row.actor_execution_id,
      eventId: row.actor_event_id,
    },
    before: row.before_state === null ? null : (JSON.parse(row.before_state) as Record<string, unknown>),
    after: row.after_state === null ? null : (JSON.parse(row.after_state) as Record<string, unknown>),
    requestId: row.request_id,
    createdAt: row.created_at,
  };
}

type AuditTable = "audit_events" | "audit_inbox";

export class AuditTrail {
  constructor(
    private readonly storage: Storage,
    private readonly pageTokens: PageTokens,
  ) {}

  /**
   * `query` of the trail, and on SQLite of its inbox too (./audit-inbox.ts), in one statement: one
   * snapshot, in which a move has put each event in one of the two. On PostgreSQL the inbox is a
   * view of the trail.
   */
  private inTrailAndInbox<O extends { id: string }>(query: (table: AuditTable) => SelectQueryBuilder<Database, AuditTable, O>) {
    const trail = this.storage.db.selectFrom(query("audit_events").as("trail")).selectAll();
    return this.storage.dialect === "sqlite" ? trail.unionAll(this.storage.db.selectFrom(query("audit_inbox").as("inbox")).selectAll()) : trail;
  }

  /** `callerId` binds the page tokens to the caller who was given them. */
  async list(access: AuditAccess, callerId: string, query: AuditQuery): Promise<Page<AuditEvent>> {
    const kind = targetKind(query.target_kind);
    let userId = query.user_id;
    if (access.kind === "subject") {
      if (userId !== undefined && userId !== access.userId) {
        throw permissionDenied("SUBJECT_NOT_ALLOWED", "a user may list only the events on their own limit rows", { metadata: { userId } });
      }
      userId = access.userId;
    }
    const kinds = access.kind === "all" ? null : access.kind === "funds" ? FUND_TARGETS : (["AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT"] as const);
    const since = query.since === undefined ? undefined : parseTimestamp(query.since, "query.since");
    const until = query.until === undefined ? undefined : parseTimestamp(query.until, "query.until");
    const filters = { kind, kinds, targetId: query.target_id, userId, appId: query.app_id, actorUserId: query.actor_user_id, actorExecutionId: query.actor_execution_id, operationId: query.operation_id, since, until };
    const scope = `audit-events.list:${callerId}:${JSON.stringify(filters)}`;
    const after = this.pageTokens.decode(scope, query.page_token, "query.page_token", 1);
    const limit = pageSize(query.page_size);
    // A kind the caller may not see, asked for, is nothing to see.
    if (kind && kinds && !kinds.includes(kind)) return { items: [], nextPageToken: "" };

    // The page's ids and sizes first, then only the events that fit (PAGE_STORED_CHARS_MAX): an
    // automation's states before and after may be a few hundred KB each.
    const newest = (table: AuditTable) => {
      let q = this.storage.db
        .selectFrom(table)
        .select("id")
        .select(sql<number>`coalesce(length(before_state), 0) + coalesce(length(after_state), 0)`.as("stored"));
      if (kind) q = q.where("target_kind", "=", kind);
      else if (kinds) q = q.where("target_kind", "in", kinds);
      if (filters.targetId !== undefined) q = q.where("target_id", "=", filters.targetId);
      if (userId !== undefined) q = q.where("target_user_id", "=", userId);
      if (filters.appId !== undefined) q = q.where("target_app_id", "=", filters.appId);
      if (filters.actorUserId !== undefined) q = q.where("actor_user_id", "=", filters.actorUserId);
      if (filters.actorExecutionId !== undefined) q = q.where("actor_execution_id", "=", filters.actorExecutionId);
      if (filters.operationId !== undefined) q = q.where("operation_id", "=", filters.operationId);
      if (since !== undefined) q = q.where("id", ">=", firstIdAt(since));
      if (until !== undefined) q = q.where("id", "<", firstIdAt(until));
      if (after) q = q.where("id", "<", String(after[0]));
      return q.orderBy("id", "desc").limit(limit + 1);
    };
    const found = await this.inTrailAndInbox(newest).orderBy("id", "desc").limit(limit + 1).execute();
    const served = found.slice(0, servedWithin(found.map((k) => Number(k.stored)), limit));
    const ids = served.map((k) => k.id);
    const rows = ids.length === 0 ? [] : await this.inTrailAndInbox((table) => this.storage.db.selectFrom(table).selectAll().where("id", "in", ids)).orderBy("id", "desc").execute();
    const last = served[served.length - 1];
    return {
      // Events are never deleted but by retention: one swept between the two reads is left out.
      items: rows.map(toAuditEvent),
      nextPageToken: found.length > served.length && last ? this.pageTokens.encode(scope, [last.id]) : "",
    };
  }
}
