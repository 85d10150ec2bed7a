// Claiming runnable executions, where the dialects differ: each pending execution (or one whose
// run's lease lapsed, after a crash) goes to exactly one worker.
//
// Runs whose lease lapsed come first, then the oldest pending ones. Each is its own query, so each
// is a seek in an index kept in its order ((state, created_at, id)): one query with `state =
// pending or lease lapsed` would sort the whole backlog on every claim.
import type { Expression, ExpressionBuilder, SqlBool } from "kysely";
import type { KnownAutomationExecutionState } from "../../generated/enums.js";
import type { Storage } from "./connect.js";
import type { AutomationExecutionsTable, Database } from "./schema.js";
import { writeTransaction, type Db } from "./transactions.js";

const PENDING: KnownAutomationExecutionState = "AUTOMATION_EXECUTION_STATE_PENDING";
const RUNNING: KnownAutomationExecutionState = "AUTOMATION_EXECUTION_STATE_RUNNING";

type Runnable = (eb: ExpressionBuilder<Database, "automation_executions">) => Expression<SqlBool>;

const runnable = (now: string): Runnable[] => [
  (eb) => eb.and([eb("state", "=", RUNNING), eb("lease_until", "<", now)]),
  (eb) => eb("state", "=", PENDING),
];

/** Claims up to `limit` runnable executions, oldest first, each leased until `leaseUntil`. */
export async function claimExecutions(storage: Storage, now: string, leaseUntil: string, limit: number): Promise<AutomationExecutionsTable[]> {
  const lock = storage.dialect === "postgres";
  const claim = (db: Db, where: Runnable, count: number) => {
    const oldest = db.selectFrom("automation_executions").select("id").where(where).orderBy("created_at").orderBy("id").limit(count);
    return db
      .updateTable("automation_executions")
      .set((eb) => ({ state: RUNNING, lease_until: leaseUntil, attempts: eb("attempts", "+", 1) }))
      .where("id", "in", lock ? oldest.forUpdate().skipLocked() : oldest)
      .returningAll()
      .execute();
  };
  const claimAll = async (db: Db) => {
    const claimed: AutomationExecutionsTable[] = [];
    for (const where of runnable(now)) {
      if (claimed.length < limit) claimed.push(...(await claim(db, where, limit - claimed.length)));
    }
    return claimed.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
  };
  // PostgreSQL: SKIP LOCKED lets claimers pass each other. SQLite: the write lock of BEGIN IMMEDIATE
  // serializes claimers across processes.
  return lock ? claimAll(storage.db) : writeTransaction(storage, { exclusive: ["automation_executions:claim"] }, claimAll);
}
