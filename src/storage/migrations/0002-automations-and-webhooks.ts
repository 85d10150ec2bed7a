// Migration 0002_automations_and_webhooks. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

export const m0002 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("automations")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("display_name", text, (c) => c.notNull())
      .addColumn("description", text, (c) => c.notNull())
      .addColumn("is_draft", "integer", (c) => c.notNull())
      .addColumn("enabled", "integer", (c) => c.notNull())
      .addColumn("steps", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("updated_at", text, (c) => c.notNull())
      .addColumn("last_executed_at", text)
      .execute();
    await db.schema
      .createTable("webhook_listeners")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("automation_id", text, (c) => c.notNull().unique().references("automations.id").onDelete("cascade"))
      .addColumn("method", text, (c) => c.notNull())
      .addColumn("jwks_url", text)
      .addColumn("allowed_cidrs", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("webhook_secrets")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("listener_id", text, (c) => c.notNull().references("webhook_listeners.id").onDelete("cascade"))
      .addColumn("sealed", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("expires_at", text)
      .execute();
    await db.schema.createIndex("webhook_secrets_by_listener").on("webhook_secrets").columns(["listener_id"]).execute();
    // The primary key settles duplicate deliveries: one event id per listener, by the database.
    await db.schema
      .createTable("webhook_events")
      .addColumn("listener_id", text, (c) => c.notNull())
      .addColumn("event_id", text, (c) => c.notNull())
      .addColumn("automation_id", text, (c) => c.notNull())
      .addColumn("received_at", text, (c) => c.notNull())
      .addColumn("outcome", text, (c) => c.notNull())
      .addColumn("not_run_reason", text)
      .addColumn("execution_id", text)
      .addPrimaryKeyConstraint("webhook_events_pk", ["listener_id", "event_id"])
      .execute();
    await db.schema.createIndex("webhook_events_by_automation").on("webhook_events").columns(["automation_id", "received_at", "event_id"]).execute();
    await db.schema.createIndex("webhook_events_by_age").on("webhook_events").columns(["received_at"]).execute();
    await db.schema
      .createTable("automation_executions")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("automation_id", text, (c) => c.notNull())
      .addColumn("event_id", text)
      .addColumn("state", text, (c) => c.notNull())
      .addColumn("context", text, (c) => c.notNull())
      .addColumn("steps", text, (c) => c.notNull())
      .addColumn("step_results", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("completed_at", text)
      .addColumn("lease_until", text)
      .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.createIndex("automation_executions_by_created").on("automation_executions").columns(["created_at", "id"]).execute();
    await db.schema.createIndex("automation_executions_by_automation").on("automation_executions").columns(["automation_id", "created_at", "id"]).execute();
    await db.schema.createIndex("automation_executions_runnable").on("automation_executions").columns(["state", "lease_until"]).execute();
  },
});
