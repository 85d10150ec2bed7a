// Opens the database named by the configuration and brings its schema up to date. Everything
// above this module sees only `Storage`: a Kysely instance and its dialect. What differs between
// the dialects lives in this folder (connection here, transactions and claims beside it).
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from "kysely";
import pg from "pg";
import { DATABASE_DEFAULTS, type DatabaseConfig } from "../config.js";
import { BoundedMap } from "../core/bounded-map.js";
import { migrationsFor } from "./migrations.js";
import { deferringBegin } from "./pg-deferred-begin.js";
import { startCheckpointer, type Checkpointer } from "./sqlite-checkpointer.js";
import type { Database } from "./schema.js";

export interface Storage {
  db: Kysely<Database>;
  dialect: "sqlite" | "postgres";
  close(): Promise<void>;
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SQLite driver prepares every query anew; preparing is a measurable share of a request
 * (see bench/RESULTS.md). Statements are reusable, and the driver runs one query at a time on the
 * connection, so a bounded cache keyed by SQL text serves them again.
 */
function cachePreparedStatements(database: SQLite.Database): void {
  const prepare = database.prepare.bind(database);
  const cache = new BoundedMap<string, SQLite.Statement>({ entries: STATEMENT_CACHE_SIZE });
  database.prepare = ((source: string) => {
    let statement = cache.get(source);
    if (!statement) {
      statement = prepare(source);
      cache.set(source, statement);
    }
    return statement;
  }) as typeof database.prepare;
}

interface Opened {
  db: Kysely<Database>;
  /** Starts what runs beside the connection once the schema is up to date. */
  startWorkers(): Promise<Checkpointer | undefined>;
}

function openSqlite(path: string, busyTimeoutMs: number): Opened {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const database = new SQLite(path);
  // WAL lets readers proceed during a write; busy_timeout waits out another process's write lock
  // (past it, SQLITE_BUSY: the request is answered 503 UNAVAILABLE).
  database.pragma("journal_mode = WAL");
  database.pragma("synchronous = NORMAL");
  database.pragma(`busy_timeout = ${busyTimeoutMs}`);
  database.pragma("foreign_keys = ON");
  cachePreparedStatements(database);
  // Without a worker (it could not start), SQLite checkpoints in the serving connection, as by default.
  const startWorkers = async () => (path === ":memory:" ? undefined : startCheckpointer(database, path).catch(() => undefined));
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }), startWorkers };
}

function openPostgres(url: string, poolSize: number, poolTimeoutMs: number): Kysely<Database> {
  // A query that waits longer than poolTimeoutMs for a connection fails (answered 503 UNAVAILABLE).
  const pool = new pg.Pool({ connectionString: url, max: poolSize, idleTimeoutMillis: 30_000, connectionTimeoutMillis: poolTimeoutMs });
  // A client that loses its connection must not take the process down: an idle one's error comes
  // through the pool; a checked-out one's fails its queries (answered 503 UNAVAILABLE) and is also
  // emitted on the client itself, where nothing else listens while it is checked out.
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: deferringBegin(pool) }) });
}

/**
 * Applies pending migrations, once, even when several instances start together.
 * - PostgreSQL: a session advisory lock, held on its own connection for the whole run, makes the
 *   instances take turns (Kysely's migrator locks only once its own tables exist, and creating those
 *   concurrently can fail).
 * - SQLite: Kysely runs all pending migrations in one transaction but takes no lock first, so a
 *   second process can start from a stale view and fail when it writes. The run is atomic, so the
 *   loser rolls back cleanly and tries again, and then finds nothing to do.
 */
async function migrateExclusively(db: Kysely<Database>, dialect: Storage["dialect"]) {
  const migrate = () => new Migrator({ db, provider: migrationsFor(dialect) }).migrateToLatest();
  if (dialect === "sqlite") {
    let outcome = await migrate();
    for (let attempt = 1; attempt < SQLITE_MIGRATION_ATTEMPTS && outcome.error; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      outcome = await migrate();
    }
    return outcome;
  }
  return db.connection().execute(async (lockHolder) => {
    await sql`select pg_advisory_lock(hashtextextended('tenant-api:migrations', 0))`.execute(lockHolder);
    try {
      return await migrate();
    } finally {
      await sql`select pg_advisory_unlock(hashtextextended('tenant-api:migrations', 0))`.execute(lockHolder);
    }
  });
}

const SQLITE_MIGRATION_ATTEMPTS = 5;

export async function openStorage(config: DatabaseConfig): Promise<Storage> {
  const dialect = config.kind;
  const { db, startWorkers }: Opened =
    config.kind === "sqlite"
      ? openSqlite(config.path, config.busyTimeoutMs ?? DATABASE_DEFAULTS.sqliteBusyTimeoutMs)
      : { db: openPostgres(config.url, config.poolSize ?? DATABASE_DEFAULTS.poolSize, config.poolTimeoutMs ?? DATABASE_DEFAULTS.poolTimeoutMs), startWorkers: async () => undefined };
  const { error, results } = await migrateExclusively(db, dialect);
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    await db.destroy();
    throw new Error(`database migration ${failed?.migrationName ?? ""} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const checkpointer = await startWorkers();
  return {
    db,
    dialect,
    close: async () => {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}
