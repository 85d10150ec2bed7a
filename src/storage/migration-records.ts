// The database's record of its migrations, in two tables: kysely_migration, Kysely's Migrator's
// (which an instance of the release before the records, 3753460, checks at its start, refusing any
// migration it does not know), and migration_compatibility, for each applied migration the last
// migration of the oldest release that runs with it (./migrate-up.ts). A migration is applied when
// either names it; one only migration_compatibility names was hidden from that check by a rollback
// (./migrate-down.ts). docs/operating.md, "Upgrading".
import { sql, type Kysely } from "kysely";
import { StartRefused } from "../config.js";

export const APPLIED = "kysely_migration";
export const COMPATIBILITY = "migration_compatibility";
/** Kysely's Migrator's lock table and row, which an instance of a release that runs Kysely's Migrator expects. */
const KYSELY_LOCK = "kysely_migration_lock";
const KYSELY_LOCK_ROW = "migration_lock";

/** The database holds tables and no record of this service's migrations: another application's. */
export class ForeignDatabase extends StartRefused {}

export interface MigrationState {
  /** Every migration applied, sorted by name. */
  applied: string[];
  /** Those kysely_migration names (the rest are kept hidden, see above). */
  named: Set<string>;
  compatibleFrom: Map<string, string>;
}

/** The tables and views of the database other than the records' (SQLite's own excluded; PostgreSQL's in the connection's schema). */
async function relations(db: Kysely<any>, dialect: "sqlite" | "postgres"): Promise<string[]> {
  const rows =
    dialect === "sqlite"
      ? await sql<{ name: string }>`select name from sqlite_master where type in ('table', 'view') and name not like 'sqlite\\_%' escape '\\'`.execute(db)
      : await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(db);
  return rows.rows.map((r) => r.name).sort();
}

/**
 * The migrations applied to the database. Refuses (StartRefused) a database that holds tables but
 * no record of this service's migrations: another application's, which a migration would alter.
 */
export async function readState(db: Kysely<any>, dialect: "sqlite" | "postgres"): Promise<MigrationState> {
  const tables = await relations(db, dialect);
  const has = (name: string) => tables.includes(name);
  if (!has(APPLIED) && !has(COMPATIBILITY) && tables.length > 0) {
    const some = tables.slice(0, 5).join(", ") + (tables.length > 5 ? `, and ${tables.length - 5} more` : "");
    throw new ForeignDatabase(`the database is not this service's: it holds tables (${some}) and no record of this service's migrations; set DATABASE_URL to this service's database, or to a new, empty one`);
  }
  const named: { name: string }[] = has(APPLIED) ? await db.selectFrom(APPLIED).select("name").execute() : [];
  const records: { name: string; compatible_from: string }[] = has(COMPATIBILITY) ? await db.selectFrom(COMPATIBILITY).select(["name", "compatible_from"]).execute() : [];
  const applied = new Set([...named.map((r) => r.name), ...records.map((r) => r.name)]);
  return { applied: [...applied].sort(), named: new Set(named.map((r) => r.name)), compatibleFrom: new Map(records.map((r) => [r.name, r.compatible_from])) };
}

/** Creates the records' tables where they are missing, as Kysely's Migrator makes its own (an earlier release's instance runs it at its start). */
export async function ensureRecordTables(db: Kysely<any>): Promise<void> {
  await db.schema.createTable(APPLIED).ifNotExists().addColumn("name", "varchar(255)", (c) => c.notNull().primaryKey()).addColumn("timestamp", "varchar(255)", (c) => c.notNull()).execute();
  await db.schema.createTable(KYSELY_LOCK).ifNotExists().addColumn("id", "varchar(255)", (c) => c.notNull().primaryKey()).addColumn("is_locked", "integer", (c) => c.notNull().defaultTo(0)).execute();
  await db.insertInto(KYSELY_LOCK).values({ id: KYSELY_LOCK_ROW, is_locked: 0 }).onConflict((oc) => oc.column("id").doNothing()).execute();
  await db.schema.createTable(COMPATIBILITY).ifNotExists().addColumn("name", "text", (c) => c.primaryKey()).addColumn("compatible_from", "text", (c) => c.notNull()).execute();
}

/** Records `name` as applied in both tables (the compatibility record left as it is when there is one). */
export async function recordApplied(db: Kysely<any>, name: string, compatibleFrom: string): Promise<void> {
  await db.insertInto(APPLIED).values({ name, timestamp: new Date().toISOString() }).onConflict((oc) => oc.column("name").doNothing()).execute();
  await db.insertInto(COMPATIBILITY).values({ name, compatible_from: compatibleFrom }).onConflict((oc) => oc.column("name").doNothing()).execute();
}

/** Records of migrations applied before the compatibility records were kept (by an earlier release). */
export async function recordCompatibility(db: Kysely<any>, records: { name: string; compatible_from: string }[]): Promise<void> {
  if (records.length === 0) return;
  await db.insertInto(COMPATIBILITY).values(records).onConflict((oc) => oc.column("name").doNothing()).execute();
}

/** Hides `name` from kysely_migration: applied and kept, for a release that refuses migrations it does not know. */
export async function hideApplied(db: Kysely<any>, name: string): Promise<void> {
  await db.deleteFrom(APPLIED).where("name", "=", name).execute();
}

/** Forgets `name` in both tables: its migration was undone. */
export async function forgetApplied(db: Kysely<any>, name: string): Promise<void> {
  await db.deleteFrom(APPLIED).where("name", "=", name).execute();
  await db.deleteFrom(COMPATIBILITY).where("name", "=", name).execute();
}
