// One migration step in a transaction of its own, beside servers that keep serving: a batch that
// fails keeps every step before it, and `npm run migrate` can be run again. On PostgreSQL the step
// first locks every table it changes that a running release uses, in one statement, each wait
// bounded by a lock_timeout below deadlock_timeout, so in a cycle of waits the step gives up, never
// a request, and is run again after a pause; on SQLite it takes the write lock at once (BEGIN
// IMMEDIATE). Why: docs/operating.md, "Upgrading".
import { sql, type Kysely, type Transaction } from "kysely";
import { databaseUnavailable } from "./unavailable.js";

export interface MigrationTransactionOptions {
  /** PostgreSQL's lock_timeout for the step's waits, at most; half the database's deadlock_timeout when that is less. */
  lockTimeoutMs: number;
  /** How many times a step that could not take its locks is run in all. */
  attempts: number;
  /** Told of each step that gave up waiting for its locks, before it is run again. */
  onRetry?: (retry: { step: string; attempt: number; attempts: number; cause: string; pauseMs: number }) => void;
}

export const MIGRATION_TRANSACTION_DEFAULTS: MigrationTransactionOptions = { lockTimeoutMs: 1_000, attempts: 60 };

/** The causes after which a step runs again: its locks not taken in time, or its own deadlock check. */
const LOCK_CAUSES = new Set(["sqlstate 55P03", "sqlstate 40P01", "SQLITE_BUSY", "SQLITE_BUSY_TIMEOUT", "SQLITE_LOCKED"]);
const lostToLocks = (e: unknown) => {
  const cause = databaseUnavailable(e);
  return cause !== undefined && LOCK_CAUSES.has(cause) ? cause : undefined;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A pause that grows from a quarter second to five, with jitter, so that the step's next try finds the requests it queued behind gone. */
const pauseBefore = (attempt: number) => Math.min(5_000, 250 * 2 ** Math.min(attempt - 1, 5)) * (0.5 + Math.random() / 2);

/** The lock_timeout of a step's transaction: `ms`, or less than the database's deadlock_timeout. */
async function lockTimeout(db: Kysely<any>, ms: number): Promise<number> {
  const { rows } = await sql<{ ms: string }>`select extract(epoch from current_setting('deadlock_timeout')::interval) * 1000 as ms`.execute(db);
  const deadlock = Number(rows[0]?.ms ?? ms * 2);
  return Math.max(1, Math.min(ms, Math.floor(deadlock / 2)));
}

async function runPostgres<T>(db: Kysely<any>, locks: readonly string[], timeoutMs: number, work: (trx: Transaction<any>) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`select set_config('lock_timeout', ${`${timeoutMs}ms`}, true)`.execute(trx);
    if (locks.length > 0) await sql`lock table ${sql.join(locks.map((t) => sql.table(t)))} in access exclusive mode`.execute(trx);
    return work(trx);
  });
}

async function runSqlite<T>(db: Kysely<any>, work: (trx: Kysely<any>) => Promise<T>): Promise<T> {
  return db.connection().execute(async (connection) => {
    await sql`begin immediate`.execute(connection);
    try {
      const result = await work(connection);
      await sql`commit`.execute(connection);
      return result;
    } catch (e) {
      await sql`rollback`.execute(connection).catch(() => undefined);
      throw e;
    }
  });
}

/**
 * Runs `work` for the step `step` in a transaction of its own, `locks` (PostgreSQL tables, locked
 * ACCESS EXCLUSIVE first) taken before it; run again while it loses to the locks of others, up to
 * `options.attempts` times.
 */
export async function inMigrationTransaction<T>(
  db: Kysely<any>,
  dialect: "sqlite" | "postgres",
  step: { name: string; locks: readonly string[] },
  work: (trx: Kysely<any>) => Promise<T>,
  options: MigrationTransactionOptions = MIGRATION_TRANSACTION_DEFAULTS,
): Promise<T> {
  const timeoutMs = dialect === "postgres" ? await lockTimeout(db, options.lockTimeoutMs) : 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return dialect === "postgres" ? await runPostgres(db, step.locks, timeoutMs, work) : await runSqlite(db, work);
    } catch (e) {
      const cause = lostToLocks(e);
      if (cause === undefined) throw e;
      if (attempt >= options.attempts) throw new Error(`migration ${step.name} could not take its locks in ${options.attempts} attempts (${cause}): the database is too busy for it now; run it again later`);
      const pauseMs = Math.round(pauseBefore(attempt));
      options.onRetry?.({ step: step.name, attempt, attempts: options.attempts, cause, pauseMs });
      await sleep(pauseMs);
    }
  }
}
