// The schema a database holds, as text that two databases can be compared by: what the migrations
// make, read back from the database's own catalog (sqlite_master; PostgreSQL's pg_catalog). The
// schema snapshot test compares a freshly migrated database with test/fixtures/schema/, and
// `npm run generate:postgres-functions` writes the functions and triggers of src/storage/postgres-functions.sql.
import { sql, type Kysely } from "kysely";

const lines = async (db: Kysely<any>, query: ReturnType<typeof sql<{ text: string }>>) => (await query.execute(db)).rows.map((r) => r.text);

/** Every object of a SQLite database: its kind, name and table, and the SQL that made it. */
async function sqliteSchema(db: Kysely<any>): Promise<string> {
  const rows = await lines(db, sql<{ text: string }>`select type || ' ' || name || ' on ' || tbl_name || char(10) || coalesce(sql, '') as text from sqlite_master where name not like 'sqlite_%' order by type, name`);
  return rows.join("\n\n") + "\n";
}

/** The functions and triggers of the current PostgreSQL schema as `create or replace` text, by name. */
export async function postgresFunctions(db: Kysely<any>): Promise<string> {
  const functions = await lines(
    db,
    sql<{ text: string }>`select pg_get_functiondef(p.oid) || ';' as text from pg_proc p where p.pronamespace = current_schema()::regnamespace order by p.proname, pg_get_function_identity_arguments(p.oid)`,
  );
  const triggers = await lines(
    db,
    sql<{ text: string }>`select pg_get_triggerdef(t.oid, true) || ';' as text from pg_trigger t join pg_class c on c.oid = t.tgrelid where c.relnamespace = current_schema()::regnamespace and not t.tgisinternal order by c.relname, t.tgname`,
  );
  return [...functions.map((f) => f.trim()), ...triggers].join("\n\n") + "\n";
}

/** Every table's columns, constraints and indexes, the views, functions and triggers of the current PostgreSQL schema. */
async function postgresSchema(db: Kysely<any>): Promise<string> {
  const columns = await lines(
    db,
    sql<{ text: string }>`select table_name || '.' || column_name || ' ' || data_type || coalesce(' collate ' || collation_name, '') || case when is_nullable = 'NO' then ' not null' else '' end || coalesce(' default ' || column_default, '') as text
      from information_schema.columns where table_schema = current_schema() order by table_name, ordinal_position`,
  );
  const constraints = await lines(
    db,
    sql<{ text: string }>`select c.relname || ' constraint ' || k.conname || ' ' || pg_get_constraintdef(k.oid) as text from pg_constraint k join pg_class c on c.oid = k.conrelid where c.relnamespace = current_schema()::regnamespace order by c.relname, k.conname`,
  );
  const indexes = await lines(db, sql<{ text: string }>`select indexdef as text from pg_indexes where schemaname = current_schema() order by tablename, indexname`);
  const views = await lines(db, sql<{ text: string }>`select 'view ' || viewname || ' as' || definition as text from pg_views where schemaname = current_schema() order by viewname`);
  return [columns.join("\n"), constraints.join("\n"), indexes.join("\n"), views.join("\n\n"), await postgresFunctions(db)].join("\n\n");
}

/** The schema of the database `db` connects to, as comparable text. */
export const schemaText = (db: Kysely<any>, dialect: "sqlite" | "postgres"): Promise<string> => (dialect === "sqlite" ? sqliteSchema(db) : postgresSchema(db));
