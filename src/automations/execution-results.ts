// Saving an execution's step results (and, with its final state, the end of its run's lease), where
// the dialects differ: on SQLite each save is a statement of the group commit; on PostgreSQL the
// saves queued while one is in flight go together in one UPDATE (docs/benchmarks.md, "What the
// profiles led to"). Every save requires the run's lease to still be the execution's (else
// LeaseLost, and the step's effect in the same transaction rolls back), so a step's effect happens
// once even when two runs overlap.
import { CompiledQuery } from "kysely";
import type { KnownAutomationExecutionState } from "../../generated/enums.js";
import type { Origin } from "../core/origin.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import { databaseUnavailable } from "../storage/unavailable.js";
import { inTransactionSpan, writeStatement, type Db } from "../storage/transactions.js";

export interface ResultsSave {
  id: string;
  /** The lease the run holds: its execution's lease_until as claimed. */
  lease: string;
  stepResults: string;
  /** With the final state (and when it was reached): the run's lease ends. */
  final?: { state: string; completedAt: string };
  /** Parked until then instead (a notification to try again): the run's lease ends, and its claim is given back. */
  parkedUntil?: string;
}

const PARKED: KnownAutomationExecutionState = "AUTOMATION_EXECUTION_STATE_PARKED";

/** The execution's lease is no longer the run's: another run has it, or will. */
export class LeaseLost extends Error {
  override name = "LeaseLost";
  constructor(readonly executionId: string) {
    super(`execution ${executionId}: its lease passed to another run`);
  }
}

/** Saves in the transaction `db` (with a step's effect). */
export async function saveResults(db: Db, save: ResultsSave): Promise<void> {
  const { id, lease, stepResults, final, parkedUntil } = save;
  const { numAffectedRows } = final
    ? await saveFinal.execute(db, { id, lease, stepResults, state: final.state, completedAt: final.completedAt })
    : parkedUntil
      ? await savePark.execute(db, { id, lease, stepResults, nextAttemptAt: parkedUntil })
      : await saveProgress.execute(db, { id, lease, stepResults });
  if (numAffectedRows === 0n) throw new LeaseLost(id);
}

/** Saves by itself: on PostgreSQL in one statement with the other saves waiting. `origin`: the execution's run. */
export function saveResultsAlone(storage: Storage, save: ResultsSave, origin?: Origin): Promise<void> {
  if (storage.dialect === "sqlite") return writeStatement(storage, (db) => saveResults(db, save), origin);
  let batcher = batchers.get(storage.db);
  if (!batcher) {
    batcher = new PostgresResultsBatch(storage.db);
    batchers.set(storage.db, batcher);
  }
  const queued = batcher;
  return inTransactionSpan(storage, origin, () => queued.save(save));
}

const saveProgress = prepared((db, v: { id: string; lease: string; stepResults: string }) =>
  db.updateTable("automation_executions").set({ step_results: v.stepResults }).where("id", "=", v.id).where("lease_until", "=", v.lease),
);

const saveFinal = prepared((db, v: { id: string; lease: string; stepResults: string; state: string; completedAt: string }) =>
  db
    .updateTable("automation_executions")
    .set({ step_results: v.stepResults, state: v.state, completed_at: v.completedAt, lease_until: null })
    .where("id", "=", v.id)
    .where("lease_until", "=", v.lease),
);

// `attempts` counts runs begun since the execution was last given back whole: a claim that ends the parking begins no resumed run.
const savePark = prepared((db, v: { id: string; lease: string; stepResults: string; nextAttemptAt: string }) =>
  db
    .updateTable("automation_executions")
    .set({ step_results: v.stepResults, state: PARKED, next_attempt_at: v.nextAttemptAt, lease_until: null, attempts: 0 })
    .where("id", "=", v.id)
    .where("lease_until", "=", v.lease),
);

/** Saves per UPDATE at most. */
const MAX_BATCH = 256;

/**
 * Characters of step results per UPDATE at most (always one save, whatever its size): an execution's
 * results may take about 1 MB (resource-budget.ts), and the statement's array parameters are a copy.
 */
const MAX_BATCH_CHARS = 4 * 1024 * 1024;

interface Queued {
  save: ResultsSave;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const batchers = new WeakMap<Db, PostgresResultsBatch>();

class PostgresResultsBatch {
  private queue: Queued[] = [];
  private busy = false;

  constructor(private readonly db: Db) {}

  save(save: ResultsSave): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ save, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.busy) return;
    this.busy = true;
    // After the current I/O phase: the runs started in it queue their saves first.
    setImmediate(() => void this.flush());
  }

  /** How many of the queue's first saves go in the next UPDATE. */
  private fitting(): number {
    let chars = 0;
    let count = 0;
    for (const { save } of this.queue) {
      chars += save.stepResults.length;
      if (count === MAX_BATCH || (count > 0 && chars > MAX_BATCH_CHARS)) break;
      count++;
    }
    return count;
  }

  private async flush(): Promise<void> {
    // By id: two UPDATEs that overlap (a run resumed by another instance) lock rows in one order.
    const batch = this.queue.splice(0, this.fitting()).sort((a, b) => (a.save.id < b.save.id ? -1 : 1));
    const settle = (items: Queued[], updated: ReadonlySet<string>) => {
      for (const item of items) updated.has(item.save.id) ? item.resolve() : item.reject(new LeaseLost(item.save.id));
    };
    try {
      settle(batch, await updateAll(this.db, batch.map((q) => q.save)));
    } catch (error) {
      // One save the database refuses must not fail the others with it: each goes again alone. Not
      // when the database is unavailable: every save would wait for it again, one after the other.
      if (batch.length === 1 || databaseUnavailable(error) !== undefined) for (const item of batch) item.reject(error);
      else for (const item of batch) await updateAll(this.db, [item.save]).then((updated) => settle([item], updated), item.reject);
    } finally {
      this.busy = false;
      if (this.queue.length > 0) this.schedule();
    }
  }
}

/**
 * One UPDATE over arrays of the values, a fixed statement whatever their count; a save without a
 * final state (nor parking) keeps the state and lease. Answers the ids it updated: those whose lease still held.
 */
const UPDATE_ALL = `update automation_executions as e
set step_results = v.step_results,
    state = coalesce(v.state, e.state),
    completed_at = coalesce(v.completed_at, e.completed_at),
    lease_until = case when v.state is null then e.lease_until end,
    next_attempt_at = coalesce(v.next_attempt_at, e.next_attempt_at),
    attempts = case when v.next_attempt_at is null then e.attempts else 0 end
from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) as v(id, step_results, state, completed_at, lease, next_attempt_at)
where e.id = v.id and e.lease_until = v.lease
returning e.id`;

async function updateAll(db: Db, saves: readonly ResultsSave[]): Promise<Set<string>> {
  const state = (s: ResultsSave) => s.final?.state ?? (s.parkedUntil ? PARKED : null);
  const parameters = [saves.map((s) => s.id), saves.map((s) => s.stepResults), saves.map(state), saves.map((s) => s.final?.completedAt ?? null), saves.map((s) => s.lease), saves.map((s) => s.parkedUntil ?? null)];
  const { rows } = await db.executeQuery<{ id: string }>(CompiledQuery.raw(UPDATE_ALL, parameters));
  return new Set(rows.map((r) => r.id));
}
