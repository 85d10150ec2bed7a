// Migration 0026_audit_filter_indexes. Frozen once released: a change is a new migration.
// The release before: indexes it does not know of: it runs.
import { type Kysely, type Migration } from "kysely";

/**
 * The audit trail's other filters, each served by an index of its own rather than a walk of the
 * whole trail newest first: an operation's events, an execution's changes, an app's targets.
 */
export const m0026: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex("audit_events_by_operation").on("audit_events").columns(["operation_id", "id"]).execute();
    await db.schema.createIndex("audit_events_by_execution").on("audit_events").columns(["actor_execution_id", "id"]).execute();
    await db.schema.createIndex("audit_events_by_app").on("audit_events").columns(["target_app_id", "id"]).execute();
  },
};
