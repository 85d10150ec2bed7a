// What several migrations share: the columns' text type, how the release before fares on a migrated
// database, and steps more than one migration takes. Frozen with the migrations that use it.
import { type Kysely, type RawBuilder, sql } from "kysely";

/**
 * The text type of every column. PostgreSQL compares text by the database's locale unless told
 * otherwise; "C" makes it compare bytes, as SQLite does, so keyset pages and sort orders are the
 * same on both.
 */
export type TextType = "text" | RawBuilder<unknown>;

/** Whether an instance of the release before the one that adds a migration keeps working on a database it was applied to. */
export interface EarlierRelease {
  sqlite: boolean;
  postgres: boolean;
}
export const RUNS: EarlierRelease = { sqlite: true, postgres: true };
export const STOPS: EarlierRelease = { sqlite: false, postgres: false };
export const RUNS_ON_POSTGRES: EarlierRelease = { sqlite: false, postgres: true };

/** The held counter's triggers on spend_authorizations go (SQLite writes a renamed table's new name into the triggers that write it: they go first). */
export async function dropHeldTriggers(db: Kysely<any>, dialect: "sqlite" | "postgres"): Promise<void> {
  await sql`drop trigger spend_held_created${sql.raw(dialect === "postgres" ? " on spend_authorizations" : "")}`.execute(db);
  await sql`drop trigger spend_held_left${sql.raw(dialect === "postgres" ? " on spend_authorizations" : "")}`.execute(db);
}

/** The usage table, its primary key in `key`'s order. */
export async function createUsageTable(db: Kysely<any>, text: TextType, dialect: "sqlite" | "postgres", key: Array<"user_id" | "app_id" | "window_start" | "window_end">): Promise<void> {
  const table = db.schema
    .createTable("spend_usage")
    .addColumn("user_id", text, (c) => c.notNull())
    .addColumn("app_id", text, (c) => c.notNull())
    .addColumn("window_start", text, (c) => c.notNull())
    .addColumn("window_end", text, (c) => c.notNull())
    .addColumn("spent_nanos", "bigint", (c) => c.notNull())
    .addColumn("held_nanos", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("held_through", text, (c) => c.notNull().defaultTo(""))
    .addPrimaryKeyConstraint("spend_usage_pk", key);
  await (dialect === "sqlite" ? table.modifyEnd(sql`without rowid`) : table).execute();
}

/** 0018's held index and SQLite's held counter triggers: a window's holds by its start and end. */
export async function holdsByWindowKey(db: Kysely<any>, dialect: "sqlite" | "postgres"): Promise<void> {
  await sql`create index spend_authorizations_held on spend_authorizations (user_id, app_id, window_start, window_end, expires_at, amount_nanos) where state = 'PENDING'`.execute(db);
  if (dialect === "sqlite") await sqliteHeldTriggers(db, windowKeyRows);
}

/** The usage rows a held counter's trigger changes for the authorization `row`, by its window's start and end (0018). */
export const windowKeyRows = (row: "new" | "old") =>
  sql.raw(`user_id = ${row}.user_id and app_id = ${row}.app_id and window_start = ${row}.window_start and window_end = ${row}.window_end and held_through < ${row}.expires_at`);

/** SQLite's held counter: a hold adds to, and its end takes from, the usage rows `rows` names. */
export async function sqliteHeldTriggers(db: Kysely<any>, rows: (row: "new" | "old") => RawBuilder<unknown>): Promise<void> {
  await sql`
    create trigger spend_held_created after insert on spend_authorizations when new.state = 'PENDING'
    begin
      update spend_usage set held_nanos = held_nanos + new.amount_nanos where ${rows("new")};
    end`.execute(db);
  await sql`
    create trigger spend_held_left after update of state on spend_authorizations when old.state = 'PENDING' and new.state <> 'PENDING'
    begin
      update spend_usage set held_nanos = held_nanos - old.amount_nanos where ${rows("old")};
    end`.execute(db);
}

/**
 * The audit trail (src/audit/). Every list reads it newest first by id (time-ordered), under one of
 * three filters an index serves: a target's history, a target user's rows (a user reading their
 * own limits' history), and an actor's changes. Append-only: a trigger refuses every UPDATE.
 */
/** The columns of an audit event, in the order of audit_events and of the SQLite inbox (0027) alike. */
export async function createAuditTable(db: Kysely<any>, text: TextType, name: string): Promise<void> {
  let table = db.schema.createTable(name).addColumn("id", text, (c) => c.primaryKey());
  for (const column of ["operation_id", "target_kind", "target_id", "target_user_id", "target_app_id", "actor_kind", "actor_user_id", "actor_credential_id", "actor_automation_id", "actor_execution_id", "actor_event_id", "request_id"]) {
    table = table.addColumn(column, text, (c) => c.notNull());
  }
  await table.addColumn("before_state", text).addColumn("after_state", text).addColumn("created_at", text, (c) => c.notNull()).execute();
}
