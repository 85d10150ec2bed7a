// Claiming runnable executions, where the dialects differ: each pending execution (or one whose
// run's lease lapsed, after a crash, or was given back, after a fault) goes to exactly one worker,
// runs whose lease lapsed first, then the oldest pending ones. A worker that stops gives back what
// it claimed and has not begun to run, so that no other worker waits for the lease.
import { CompiledQuery, type Expression, type ExpressionBuilder, type SqlBool } from "kysely";
import type { KnownAutomationExecutionState } from "../../generated/enums.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationExecutionsTable, Database } from "../storage/schema.js";
import { writeStatement, writeTransaction, type Db } from "../storage/transactions.js";

const PENDING: KnownAutomationExecutionState = "AUTOMATION_EXECUTION_STATE_PENDING";
const RUNNING: KnownAutomationExecutionState = "AUTOMATION_EXECUTION_STATE_RUNNING";

type Runnable = (eb: ExpressionBuilder<Database, "automation_executions">) => Expression<SqlBool>;

/**
 * What a claim takes, in order: runs whose lease lapsed, then pending ones. Each is its own select, a
 * seek in an index kept in its order ((state, created_at, id)): one select of both would sort the
 * whole backlog on every claim.
 */
const runnable = (now: string): Runnable[] => [
  (eb) => eb.and([eb("state", "=", RUNNING), eb("lease_until", "<", now)]),
  (eb) => eb("state", "=", PENDING),
];

/** Claims up to `limit` runnable executions, oldest first, each leased until `leaseUntil`. */
export async function claimExecutions(storage: Storage, now: string, leaseUntil: string, limit: number): Promise<AutomationExecutionsTable[]> {
  // SQLite: the write lock of BEGIN IMMEDIATE serializes claimers across processes.
  const claimed =
    storage.dialect === "postgres"
      ? await claimOnPostgres(storage.db, now, leaseUntil, limit)
      : await writeTransaction(storage, { exclusive: ["automation_executions:claim"] }, async (db) => {
          const found: AutomationExecutionsTable[] = [];
          for (const where of runnable(now)) {
            if (found.length < limit) found.push(...(await claimWhere(db, where, leaseUntil, limit - found.length)));
          }
          return found;
        });
  return claimed.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
}

/**
 * How many executions are runnable now (pending, or their run's lease lapsed), counted up to `cap`:
 * each kind is a seek in the queue's index, so the count reads `cap` index entries at most.
 */
export async function countRunnable(db: Db, now: string, cap: number): Promise<number> {
  let count = 0;
  for (const where of runnable(now)) {
    if (count >= cap) break;
    const found = db.selectFrom("automation_executions").select("id").where(where).limit(cap - count).as("found");
    const row = await db.selectFrom(found).select((eb) => eb.fn.countAll<number | string>().as("n")).executeTakeFirstOrThrow();
    count += Number(row.n);
  }
  return count;
}

function claimWhere(db: Db, where: Runnable, leaseUntil: string, count: number): Promise<AutomationExecutionsTable[]> {
  const oldest = db.selectFrom("automation_executions").select("id").where(where).orderBy("created_at").orderBy("id").limit(count);
  return db
    .updateTable("automation_executions")
    .set((eb) => ({ state: RUNNING, lease_until: leaseUntil, attempts: eb("attempts", "+", 1) }))
    .where("id", "in", oldest)
    .returningAll()
    .execute();
}

/**
 * Both kinds in one statement (a round trip costs this process more than the query costs the
 * database): the pending ones fill what the lapsed leave of the limit, each row locked only as it
 * is read, and SKIP LOCKED lets claimers pass each other. The ids as an array, so that the update
 * finds them by primary key whatever the planner guesses of their count.
 */
const CLAIM_ON_POSTGRES = `with lapsed as (
  select id from automation_executions where state = $1 and lease_until < $3 order by created_at, id limit $4 for update skip locked
), pending as (
  select id from automation_executions where state = $5 order by created_at, id limit $4 - (select count(*) from lapsed) for update skip locked
)
update automation_executions set state = $1, lease_until = $2, attempts = attempts + 1
where id = any(array(select id from lapsed union all select id from pending))
returning *`;

async function claimOnPostgres(db: Db, now: string, leaseUntil: string, limit: number): Promise<AutomationExecutionsTable[]> {
  const result = await db.executeQuery<AutomationExecutionsTable>(CompiledQuery.raw(CLAIM_ON_POSTGRES, [RUNNING, leaseUntil, now, limit, PENDING]));
  return [...result.rows];
}

/** Running executions whose lease is still the one given (not claimed by another since, nor ended). */
const stillHeld =
  (leases: ReadonlyArray<{ id: string; lease: string | null }>) =>
  (eb: ExpressionBuilder<Database, "automation_executions">): Expression<SqlBool> =>
    eb.and([eb("state", "=", RUNNING), eb.or(leases.map(({ id, lease }) => eb.and([eb("id", "=", id), eb("lease_until", "=", lease)])))]);

/**
 * Ends, as of `endedAt` (past), the leases of runs that stopped short (the database failed under
 * them): the next claim takes their executions as lapsed, at once rather than when the lease would
 * have run out. Only where the lease is still the one given: an execution another worker claimed
 * since, or that ended, is left alone. Answers how many were given back.
 */
export async function endLeases(storage: Storage, leases: ReadonlyArray<{ id: string; lease: string }>, endedAt: string): Promise<number> {
  if (leases.length === 0) return 0;
  const result = await writeStatement(storage, (db) =>
    db
      .updateTable("automation_executions")
      .set({ lease_until: endedAt })
      .where(stillHeld(leases))
      .executeTakeFirst(),
  );
  return Number(result.numUpdatedRows);
}

/**
 * Makes executions claimed and not begun pending again, for any worker to claim at once. Each only
 * while it still holds the lease given with the claim: one whose lease lapsed may be another's now.
 * The claim's attempt is taken back, as no run began: `attempts` counts runs begun, so that a run
 * that finds more than one before it resumes an execution whose earlier run did not finish.
 */
export async function releaseExecutions(storage: Storage, held: readonly Pick<AutomationExecutionsTable, "id" | "lease_until">[]): Promise<void> {
  if (held.length === 0) return;
  await writeStatement(storage, (db) =>
    db
      .updateTable("automation_executions")
      .set((eb) => ({ state: PENDING, lease_until: null, attempts: eb("attempts", "-", 1) }))
      .where(stillHeld(held.map((e) => ({ id: e.id, lease: e.lease_until }))))
      .execute(),
  );
}
