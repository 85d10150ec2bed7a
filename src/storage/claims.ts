// Claiming the next runnable execution, where the dialects differ: each pending execution (or one
// whose run's lease lapsed, after a crash) goes to exactly one worker.
//
// Runs whose lease lapsed come first, then the oldest pending one. Each is its own query, so each
// is a seek in an index kept in its order ((state, lease_until) and (state, created_at, id)): one
// query with `state = pending or lease lapsed` would sort the whole backlog on every claim.
import type { Expression, ExpressionBuilder, SqlBool } from "kysely";
import type { Storage } from "./connect.js";
import type { AutomationExecutionsTable, Database } from "./schema.js";
import { writeTransaction, type Db } from "./transactions.js";

const PENDING = "AUTOMATION_EXECUTION_STATE_PENDING";
const RUNNING = "AUTOMATION_EXECUTION_STATE_RUNNING";

type Runnable = (eb: ExpressionBuilder<Database, "automation_executions">) => Expression<SqlBool>;

const runnable = (now: string): Runnable[] => [
  (eb) => eb.and([eb("state", "=", RUNNING), eb("lease_until", "<", now)]),
  (eb) => eb("state", "=", PENDING),
];

const oldest = (db: Db, where: Runnable) =>
  db.selectFrom("automation_executions").select("id").where(where).orderBy("created_at").orderBy("id").limit(1);

export async function claimNextExecution(storage: Storage, now: string, leaseUntil: string): Promise<AutomationExecutionsTable | undefined> {
  const claim = (db: Db, where: Runnable, lock: boolean) =>
    db
      .updateTable("automation_executions")
      .set((eb) => ({ state: RUNNING, lease_until: leaseUntil, attempts: eb("attempts", "+", 1) }))
      .where("id", "=", (lock ? oldest(db, where).forUpdate().skipLocked() : oldest(db, where)))
      .returningAll()
      .executeTakeFirst();
  if (storage.dialect === "postgres") {
    for (const where of runnable(now)) {
      const claimed = await claim(storage.db, where, true);
      if (claimed) return claimed;
    }
    return undefined;
  }
  // SQLite: the write lock of BEGIN IMMEDIATE serializes claimers across processes.
  return writeTransaction(storage, { exclusive: ["automation_executions:claim"] }, async (db) => {
    for (const where of runnable(now)) {
      const claimed = await claim(db, where, false);
      if (claimed) return claimed;
    }
    return undefined;
  });
}
