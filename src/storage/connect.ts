// Opens the database named by the configuration and brings its schema up to date. Everything
// above this module sees only `Storage`: a Kysely instance and the dialect's few differences.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, Migrator, SqliteDialect } from "kysely";
import type { Config } from "../config.js";
import { migrations } from "./migrations.js";
import type { Database } from "./schema.js";

export interface Storage {
  db: Kysely<Database>;
  dialect: "sqlite" | "postgres";
  close(): Promise<void>;
}

function openSqlite(path: string): Kysely<Database> {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const database = new SQLite(path);
  // WAL lets readers proceed during a write; busy_timeout waits out another process's write lock.
  database.pragma("journal_mode = WAL");
  database.pragma("synchronous = NORMAL");
  database.pragma("busy_timeout = 5000");
  database.pragma("foreign_keys = ON");
  return new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
}

export async function openStorage(config: Config["database"]): Promise<Storage> {
  if (config.kind !== "sqlite") throw new Error("DATABASE_URL=postgres:// is not supported yet; use sqlite:<path>");
  const db = openSqlite(config.path);
  const { error, results } = await new Migrator({ db, provider: migrations }).migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    await db.destroy();
    throw new Error(`database migration ${failed?.migrationName ?? ""} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { db, dialect: "sqlite", close: () => db.destroy() };
}
