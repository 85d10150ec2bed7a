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
import { closingLostConnections } from "./pg-connection-faults.js";
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

type PostgresConfig = Extract<DatabaseConfig, { kind: "postgres" }>;

/**
 * The pool of PostgreSQL connections. A query that waits longer than the pool timeout for a
 * connection, or for a new one to open, fails (answered 503 UNAVAILABLE), as does a statement past
 * statement_timeout (the database cancels it) and a query unanswered past the query timeout (the
 * connection is closed: pg-connection-faults.ts). TCP keepalive finds a peer gone while a
 * connection is idle; idle_in_transaction_session_timeout ends, on the database's side, a session
 * whose client went silent in a transaction, with the locks it held.
 * `forMigrations`: no statement or query timeouts; a migration may rewrite a large table, and an
 * instance waits for the migration lock while another migrates.
 */
function postgresPool(config: PostgresConfig, forMigrations = false): pg.Pool {
  const d = DATABASE_DEFAULTS;
  const keepAliveMs = config.keepAliveMs ?? d.keepAliveMs;
  const timeouts = forMigrations
    ? {}
    : {
        statement_timeout: config.statementTimeoutMs ?? d.statementTimeoutMs,
        query_timeout: config.queryTimeoutMs ?? d.queryTimeoutMs,
        idle_in_transaction_session_timeout: config.idleInTransactionTimeoutMs ?? d.idleInTransactionTimeoutMs,
      };
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.poolSize ?? d.poolSize,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: config.poolTimeoutMs ?? d.poolTimeoutMs,
    keepAlive: keepAliveMs > 0,
    keepAliveInitialDelayMillis: keepAliveMs,
    ...timeouts,
  });
  // A client that loses its connection must not take the process down: an idle one's error comes
  // through the pool; a checked-out one's fails its queries (answered 503 UNAVAILABLE) and is also
  // emitted on the client itself, where nothing else listens while it is checked out.
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

function openPostgres(config: PostgresConfig, forMigrations = false): Kysely<Database> {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: deferringBegin(closingLostConnections(postgresPool(config, forMigrations))) }) });
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
    config.kind === "sqlite" ? openSqlite(config.path, config.busyTimeoutMs ?? DATABASE_DEFAULTS.sqliteBusyTimeoutMs) : { db: openPostgres(config), startWorkers: async () => undefined };
  const migrating = config.kind === "postgres" ? openPostgres(config, true) : db;
  const { error, results } = await migrateExclusively(migrating, dialect).finally(() => migrating !== db && migrating.destroy());
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
