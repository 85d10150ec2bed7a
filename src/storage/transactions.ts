// Transactions, where the dialects differ: services write every read-modify-write through
// `writeTransaction` and never issue BEGIN or locking SQL themselves. SQLite: `BEGIN IMMEDIATE`
// takes the write lock before the first read, so read-modify-writes never interleave nor fail to
// upgrade a lock half-way, and transactions queued in one turn of the event loop share a COMMIT
// (sqlite-group-commit.ts). PostgreSQL: READ COMMITTED, first taking advisory locks on `lockKeys`
// and `sharedKeys` (a row that does not exist yet cannot be locked FOR UPDATE, a key can).
import { type Kysely, sql } from "kysely";
import type { Origin } from "../core/origin.js";
import { inChildSpan } from "../core/spans.js";
import type { Storage } from "./connect.js";
import { failureCause } from "./database-observer.js";
import type { Database } from "./schema.js";
import { SqliteGroupCommit } from "./sqlite-group-commit.js";

/** What a transaction body queries through: the transaction's connection. */
export type Db = Kysely<Database>;

/**
 * Called by a service with its result inside the transaction of its effect, before it commits: the
 * caller's own record of the result (an idempotent request's kept answer) commits with the effect.
 */
export type BeforeCommit<T> = ((db: Db, result: T) => Promise<void>) & {
  /**
   * The same record as values for the service's own last statement to insert (one round trip less
   * on PostgreSQL), instead of calling the function; absent when the record has no such form.
   */
  asWrite?: (result: T) => AnswerWrite;
};

/** A record with its answer, kept by the attempt that ran the request, at `created_at`. */
export interface KeptRecord {
  id: string;
  fingerprint: string;
  owner: string;
  answer: string;
  created_at: string;
  /** Records created at or before this are past retention. */
  retained: string;
}

/** An idempotent answer to keep: the record to insert with the effect. */
export interface AnswerWrite {
  record: KeptRecord;
  /** Called by the service in its transaction with whether its statement kept the record; throws (so the effect rolls back) if not. */
  settle(kept: boolean): void;
}

export interface Locks {
  /** Keys written by the transaction, e.g. `subject_app_limits:<user>:<app>`. */
  exclusive: readonly string[];
  /** Keys only read but which must not change until commit, e.g. `fund_policy`. */
  shared?: readonly string[];
}

/** How a write runs: in a caller's transaction or its own, and for what. */
export interface WriteOptions {
  /**
   * Joins this transaction instead of making one (taking the locks in it on PostgreSQL), so a caller
   * can commit its own writes atomically with a service's, e.g. an automation step's effect with the
   * step's result.
   */
  outer?: Db | undefined;
  /** Where the change comes from (a request, an execution); none for background work. */
  origin?: Origin | undefined;
}

/** Runs `body` in a write transaction holding `locks` (or in `options.outer`). */
export async function writeTransaction<T>(storage: Storage, locks: Locks, body: (db: Db) => Promise<T>, options: WriteOptions = {}): Promise<T> {
  const { outer, origin } = options;
  if (outer) {
    if (storage.dialect === "postgres") await takeLocks(outer, locks);
    return body(outer);
  }
  if (storage.dialect === "sqlite") return inTransactionSpan(storage, origin, () => observed(storage, groupCommit(storage).run(body)));
  return inTransactionSpan(storage, origin, () =>
    observed(
      storage,
      storage.db.transaction().execute(async (trx) => {
        await takeLocks(trx, locks);
        return body(trx);
      }),
    ),
  );
}

/**
 * A write of one statement, atomic by itself: on PostgreSQL it runs as it is; on SQLite it joins the
 * group commit instead of paying for a commit of its own.
 */
export function writeStatement<T>(storage: Storage, body: (db: Db) => Promise<T>, origin?: Origin): Promise<T> {
  return inTransactionSpan(storage, origin, () => observed(storage, storage.dialect === "sqlite" ? groupCommit(storage).run(body) : body(storage.db)));
}

/** `run`, whose failure the storage's observer is told of when the database failed it (not when its body refused the request). */
function observed<T>(storage: Storage, run: Promise<T>): Promise<T> {
  const { observer } = storage;
  if (!observer) return run;
  return run.catch((error: unknown) => {
    const cause = failureCause(error);
    if (cause !== undefined) observer.transactionFailed(cause);
    throw error;
  });
}

/** The `db.system.name` of each dialect (OpenTelemetry's semantic conventions). */
const SPAN_ATTRIBUTES = { sqlite: { "db.system.name": "sqlite" }, postgres: { "db.system.name": "postgresql" } } as const;

/**
 * `transaction` (a transaction, or a statement that is one by itself) as a child span of the traced
 * request or execution it serves (`origin`'s span), from its start (on SQLite, its wait for the
 * shared commit included) until it has committed or failed.
 */
export function inTransactionSpan<T>(storage: Storage, origin: Origin | undefined, transaction: () => Promise<T>): Promise<T> {
  return inChildSpan(origin?.span, "db.transaction", SPAN_ATTRIBUTES[storage.dialect], transaction);
}

const groupCommits = new WeakMap<Kysely<Database>, SqliteGroupCommit>();

function groupCommit(storage: Storage): SqliteGroupCommit {
  let group = groupCommits.get(storage.db);
  if (!group) {
    group = new SqliteGroupCommit(storage.db, storage.observer);
    groupCommits.set(storage.db, group);
  }
  return group;
}

async function takeLocks(db: Db, locks: Locks): Promise<void> {
  // Sorted, so two transactions taking the same keys never wait on each other in a cycle.
  for (const key of [...locks.exclusive].sort()) await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(db);
  for (const key of [...(locks.shared ?? [])].sort()) await sql`select pg_advisory_xact_lock_shared(hashtextextended(${key}, 0))`.execute(db);
}

/** Several reads that must see one state of the database (a snapshot). */
export async function readTransaction<T>(storage: Storage, body: (db: Db) => Promise<T>, origin?: Origin): Promise<T> {
  // SQLite: a deferred transaction: in WAL mode its reads share one snapshot and block no writer.
  const transaction = storage.dialect === "sqlite" ? storage.db.transaction() : storage.db.transaction().setIsolationLevel("repeatable read");
  return inTransactionSpan(storage, origin, () => observed(storage, transaction.execute(body)));
}
