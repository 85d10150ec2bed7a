// Opens the database named by the configuration and brings its schema up to date (./migrate-up.ts).
// Everything above this module sees only `Storage`: a Kysely instance and its dialect. What differs
// between the dialects lives in this folder (connection here, transactions and claims beside it).
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type SQLite from "better-sqlite3";
import { Kysely, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { ConfigError, DATABASE_DEFAULTS, type DatabaseConfig } from "../config.js";
import { BoundedMap } from "../core/bounded-map.js";
import { migrateDatabase, planFor, type MigrateOptions } from "./migrate-up.js";
import { migrateDownTo, type DownOptions, type DownTo } from "./migrate-down.js";
import type { Release } from "./releases.js";
import { MIGRATION_TRANSACTION_DEFAULTS } from "./migration-transaction.js";
import type { DatabaseObserver, PoolCounts } from "./database-observer.js";
import { closingLostConnections } from "./pg-connection-faults.js";
import { ProbeConnection } from "./probe-connection.js";
import { deferringBegin } from "./pg-deferred-begin.js";
import { startCheckpointer, type Checkpointer } from "./sqlite-checkpointer.js";
import type { Database } from "./schema.js";

export interface Storage {
  db: Kysely<Database>;
  dialect: "sqlite" | "postgres";
  close(): Promise<void>;
  /** Told of the database's failures and waits (metrics); absent when nothing listens. */
  observer?: DatabaseObserver;
  /** PostgreSQL: the pool's connections now. */
  poolCounts?: () => PoolCounts;
  /** PostgreSQL: the reachability check's `select 1`, on a connection of its own (./probe-connection.ts). */
  probe?: ProbeConnection;
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SQLite driver prepares every query anew; preparing is a measurable share of a request
 * (bench/RESULTS.md, "The webhook intake"). Statements are reusable, and the driver runs one query at a time on the
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
  poolCounts?: () => PoolCounts;
  probe?: ProbeConnection;
  /** Starts what runs beside the connection once the schema is up to date. */
  startWorkers(): Promise<Checkpointer | undefined>;
}

/**
 * better-sqlite3 is an optional dependency: a PostgreSQL deployment installs without it (`npm ci
 * --omit=optional`, no native build), so it is loaded only when SQLite is configured.
 */
export async function loadSqlite(): Promise<typeof SQLite> {
  try {
    return (await import("better-sqlite3")).default;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ERR_MODULE_NOT_FOUND") throw e;
    throw new ConfigError(`DATABASE_URL names an SQLite database, and better-sqlite3 (an optional dependency) is not installed: install it (npm ci without --omit=optional), or set DATABASE_URL to a postgres:// URL`);
  }
}

async function openSqlite(path: string, busyTimeoutMs: number): Promise<Opened> {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const database = new (await loadSqlite())(path);
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
        lock_timeout: config.lockTimeoutMs ?? d.lockTimeoutMs,
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

function openPostgres(config: PostgresConfig, forMigrations = false, observer?: DatabaseObserver): Opened {
  const pool = postgresPool(config, forMigrations);
  return {
    db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: deferringBegin(closingLostConnections(pool, observer)) }) }),
    poolCounts: () => ({ open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: config.poolSize ?? DATABASE_DEFAULTS.poolSize }),
    ...(forMigrations ? {} : { probe: new ProbeConnection({ url: config.url, connectTimeoutMs: config.poolTimeoutMs ?? DATABASE_DEFAULTS.poolTimeoutMs, keepAliveMs: config.keepAliveMs ?? DATABASE_DEFAULTS.keepAliveMs }) }),
    startWorkers: async () => undefined,
  };
}

async function open(config: DatabaseConfig, observer?: DatabaseObserver, forMigrations = false): Promise<Opened & { dialect: Storage["dialect"] }> {
  if (config.kind === "sqlite") return { ...(await openSqlite(config.path, config.busyTimeoutMs ?? DATABASE_DEFAULTS.sqliteBusyTimeoutMs)), dialect: "sqlite" };
  return { ...openPostgres(config, forMigrations, observer), dialect: "postgres" };
}

/**
 * Opens the database; applies pending migrations unless `migrate` is false, in which case it refuses
 * a database that lacks any (StartRefused), as it refuses one a later release migrated beyond what
 * this release runs with (./migrate-up.ts). On PostgreSQL migrations run on a pool of their own,
 * without the statement timeouts: a migration, or the wait for another instance's, may be long.
 * `observer` is told of what the database fails at and waits for once the schema is up to date.
 */
export async function openStorage(config: DatabaseConfig, options: { migrate?: boolean; observer?: DatabaseObserver; migrations?: Partial<MigrateOptions> } = {}): Promise<Storage> {
  const { db, dialect, startWorkers, poolCounts, probe } = await open(config, options.observer);
  const migrating = config.kind === "postgres" ? openPostgres(config, true).db : db;
  try {
    await migrateDatabase(migrating, dialect, options.migrate ?? true, undefined, { ...MIGRATION_TRANSACTION_DEFAULTS, ...options.migrations }).finally(() => migrating !== db && migrating.destroy());
  } catch (e) {
    await db.destroy();
    throw e;
  }
  const checkpointer = await startWorkers();
  return {
    db,
    dialect,
    close: async () => {
      probe?.drop();
      await checkpointer?.stop();
      await db.destroy();
    },
    ...(options.observer ? { observer: options.observer } : {}),
    ...(poolCounts ? { poolCounts } : {}),
    ...(probe ? { probe } : {}),
  };
}

/** `npm run migrate`: applies the pending migrations and closes; answers their names. */
export async function migrateStorage(config: DatabaseConfig, options: Partial<MigrateOptions> = {}): Promise<string[]> {
  const { db, dialect } = await open(config, undefined, true);
  try {
    return await migrateDatabase(db, dialect, true, undefined, { ...MIGRATION_TRANSACTION_DEFAULTS, ...options });
  } finally {
    await db.destroy();
  }
}

/**
 * `npm run migrate -- --down-to <release>`: makes the database one `release` runs on (./migrate-down.ts)
 * and closes; `prepare` runs first, on the database as it is (the secrets key's check).
 */
export async function rollBackStorage(config: DatabaseConfig, release: Release, options: Partial<DownOptions> & { prepare?: (storage: Storage) => Promise<void> } = {}): Promise<DownTo> {
  const { db, dialect } = await open(config, undefined, true);
  try {
    await options.prepare?.({ db, dialect, close: () => db.destroy() });
    return await migrateDownTo(db, dialect, release, planFor(dialect), { ...MIGRATION_TRANSACTION_DEFAULTS, ...options });
  } finally {
    await db.destroy();
  }
}
