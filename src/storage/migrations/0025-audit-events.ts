// Migration 0025_audit_events. Frozen once released: a change is a new migration.
// The release before: a table it does not know of: it runs (its changes are not audited).
import { type Kysely, type Migration, sql } from "kysely";
import { createAuditTable, type TextType } from "./migration-kit.js";

export const m0025 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    await createAuditTable(db, text, "audit_events");
    await db.schema.createIndex("audit_events_by_target").on("audit_events").columns(["target_kind", "target_id", "id"]).execute();
    await db.schema.createIndex("audit_events_by_target_user").on("audit_events").columns(["target_user_id", "id"]).execute();
    await db.schema.createIndex("audit_events_by_actor").on("audit_events").columns(["actor_user_id", "id"]).execute();
    if (dialect === "sqlite") {
      await sql`create trigger audit_events_append_only before update on audit_events begin select raise(abort, 'audit events are append-only'); end`.execute(db);
    } else {
      await sql`create function audit_events_append_only() returns trigger language plpgsql as $$ begin raise exception 'audit events are append-only'; end $$`.execute(db);
      await sql`create trigger audit_events_append_only before update on audit_events for each row execute function audit_events_append_only()`.execute(db);
    }
  },
});
