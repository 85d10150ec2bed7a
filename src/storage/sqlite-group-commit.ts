// SQLite write transactions that arrive in the same turn of the event loop share one COMMIT: a
// commit appends the changed pages to the WAL and is the largest cost of a small write, and the
// webhook intake and the execution worker commit several times per event. Each transaction runs in
// its own savepoint, so one that fails rolls back alone, and every caller learns its outcome only
// after the shared COMMIT: nothing is answered before it is durable. Why: docs/benchmarks.md, "What
// the profiles led to".
import { CompiledQuery, type Kysely } from "kysely";
import type { DatabaseObserver } from "./database-observer.js";
import type { Database } from "./schema.js";

/** Transactions per COMMIT at most, so that the first of a long queue does not wait long. */
const MAX_BATCH = 64;

const BEGIN = CompiledQuery.raw("begin immediate");
const COMMIT = CompiledQuery.raw("commit");
const ROLLBACK = CompiledQuery.raw("rollback");
const SAVEPOINT = CompiledQuery.raw("savepoint grouped");
const RELEASE = CompiledQuery.raw("release grouped");
const ROLLBACK_TO = CompiledQuery.raw("rollback to grouped");

interface Queued {
  body: (db: Kysely<Database>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class SqliteGroupCommit {
  private queue: Queued[] = [];
  private busy = false;

  constructor(
    private readonly db: Kysely<Database>,
    /** Told how long each BEGIN IMMEDIATE waited for the write lock (another process's write, up to busy_timeout). */
    private readonly observer?: DatabaseObserver,
  ) {}

  /** Runs `body` in a write transaction (BEGIN IMMEDIATE) shared with the others queued now. */
  run<T>(body: (db: Kysely<Database>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ body, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.busy) return;
    this.busy = true;
    // After the current I/O phase: the requests read in it queue their writes first.
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    try {
      await this.db.connection().execute((db) => commitBatch(db, batch, this.observer));
    } catch (error) {
      for (const item of batch) item.reject(error);
    } finally {
      this.busy = false;
      if (this.queue.length > 0) this.schedule();
    }
  }
}

async function commitBatch(db: Kysely<Database>, batch: readonly Queued[], observer: DatabaseObserver | undefined): Promise<void> {
  const beginning = performance.now();
  try {
    await db.executeQuery(BEGIN);
  } finally {
    observer?.waitedForWriteLock((performance.now() - beginning) / 1000);
  }
  const settle: Array<() => void> = [];
  try {
    for (const item of batch) {
      await db.executeQuery(SAVEPOINT);
      try {
        const value = await item.body(db);
        await db.executeQuery(RELEASE);
        settle.push(() => item.resolve(value));
      } catch (error) {
        await db.executeQuery(ROLLBACK_TO);
        await db.executeQuery(RELEASE);
        settle.push(() => item.reject(error));
      }
    }
    await db.executeQuery(COMMIT);
  } catch (error) {
    // The transaction itself failed (a savepoint gone with an automatic rollback, a failed COMMIT):
    // nothing of the batch is kept, every caller gets the error.
    await db.executeQuery(ROLLBACK).catch(() => undefined);
    throw error;
  }
  for (const done of settle) done();
}
