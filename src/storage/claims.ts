// Claiming the next runnable execution, where the dialects differ: each pending execution (or one
// whose run's lease lapsed, after a crash) goes to exactly one worker.
import { sql } from "kysely";
import type { Storage } from "./connect.js";
import type { AutomationExecutionsTable } from "./schema.js";
import { writeTransaction } from "./transactions.js";

const PENDING = "AUTOMATION_EXECUTION_STATE_PENDING";
const RUNNING = "AUTOMATION_EXECUTION_STATE_RUNNING";

export async function claimNextExecution(storage: Storage, now: string, leaseUntil: string): Promise<AutomationExecutionsTable | undefined> {
  if (storage.dialect === "postgres") {
    const result = await sql<AutomationExecutionsTable>`
      update automation_executions set state = ${RUNNING}, lease_until = ${leaseUntil}, attempts = attempts + 1
      where id = (
        select id from automation_executions
        where state = ${PENDING} or (state = ${RUNNING} and lease_until < ${now})
        order by created_at, id limit 1 for update skip locked)
      returning *`.execute(storage.db);
    return result.rows[0];
  }
  // SQLite: the write lock of BEGIN IMMEDIATE serializes claimers across processes.
  return writeTransaction(storage, { exclusive: ["automation_executions:claim"] }, async (db) => {
    const next = await db
      .selectFrom("automation_executions")
      .select("id")
      .where((eb) => eb.or([eb("state", "=", PENDING), eb.and([eb("state", "=", RUNNING), eb("lease_until", "<", now)])]))
      .orderBy("created_at")
      .orderBy("id")
      .limit(1)
      .executeTakeFirst();
    if (!next) return undefined;
    return db
      .updateTable("automation_executions")
      .set((eb) => ({ state: RUNNING, lease_until: leaseUntil, attempts: eb("attempts", "+", 1) }))
      .where("id", "=", next.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}
