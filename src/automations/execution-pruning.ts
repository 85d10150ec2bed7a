// Removing finished executions, a batch at a time, where the dialects differ. A batch is one DELETE
// of at most `limit` rows, found through the partial indexes of finished executions: on PostgreSQL
// its select locks its rows FOR UPDATE SKIP LOCKED, so instances pruning at once take different
// rows; on SQLite it is a short write of one statement. An automation's newest execution stays
// whatever its age (its lastExecutedAt is read from it). docs/operating.md, "Storage and
// retention".
import { sql, type ExpressionBuilder, type SelectQueryBuilder } from "kysely";
import type { Storage } from "../storage/connect.js";
import type { Database } from "../storage/schema.js";
import { writeStatement, type Db } from "../storage/transactions.js";

type Executions = SelectQueryBuilder<Database, "automation_executions", { id: string }>;

/**
 * Deletes the executions `doomed` selects (a bounded select): on PostgreSQL those no other pruner
 * has locked, found by primary key as an array (a semi-join on the select was planned as a scan of
 * the whole table).
 */
async function deleteBatch(storage: Storage, doomed: (db: Db) => Executions): Promise<number> {
  return writeStatement(storage, async (db) => {
    const remove = db.deleteFrom("automation_executions");
    const result = await (storage.dialect === "postgres"
      ? remove.where("id", "=", sql<string>`any(array(${doomed(db).forUpdate().skipLocked()}))`)
      : remove.where("id", "in", doomed(db))
    ).executeTakeFirst();
    return Number(result.numDeletedRows);
  });
}

/**
 * Finished executions: completed_at is set by the save of the final state (DONE or ERROR) alone
 * (./execution-results.ts), which ends the lease. The state is not tested: an equality on it would
 * draw SQLite's planner to the queue index (state, created_at, id) and through every finished one.
 */
const finished = (db: Db) => db.selectFrom("automation_executions").select("id").where("completed_at", "is not", null).where("lease_until", "is", null);

/**
 * Not what lastExecutedAt reads: older than its automation's newest execution (one seek in the index
 * by automation, as lastExecutedAt's own max), or of an automation deleted.
 */
const notLastOfItsAutomation = (eb: ExpressionBuilder<Database, "automation_executions">) =>
  eb.or([
    eb(
      "automation_executions.created_at",
      "<",
      eb
        .selectFrom("automation_executions as newest")
        .select((n) => n.fn.max("newest.created_at").as("at"))
        .whereRef("newest.automation_id", "=", "automation_executions.automation_id"),
    ),
    eb.not(eb.exists(eb.selectFrom("automations").select(sql.lit(1).as("one")).whereRef("automations.id", "=", "automation_executions.automation_id"))),
  ]);

/** Removes up to `limit` finished executions that finished before `before` (ISO), oldest first; answers how many. */
export function pruneFinishedBefore(storage: Storage, before: string, limit: number): Promise<number> {
  return deleteBatch(storage, (db) => finished(db).where("completed_at", "<", before).where(notLastOfItsAutomation).orderBy("completed_at").limit(limit));
}

/** Where an automation's finished executions stop being kept: the newest one past its `keep` newest, in the order executions are listed. */
export interface Cut {
  created_at: string;
  id: string;
}

/** The newest finished execution of `automationId` past its `keep` newest (read from the index alone), or none. */
export async function finishedCut(storage: Storage, automationId: string, keep: number): Promise<Cut | undefined> {
  return storage.db
    .selectFrom("automation_executions")
    .select(["created_at", "id"])
    .where("automation_id", "=", automationId)
    .where("completed_at", "is not", null)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(1)
    .offset(keep)
    .executeTakeFirst();
}

/**
 * Removes up to `limit` finished executions of `automationId` at `cut` or before it; answers how
 * many. Executions finishing later only push the cut later: one read earlier removes none of the
 * `keep` newest.
 */
export function pruneFinishedThrough(storage: Storage, automationId: string, cut: Cut, limit: number): Promise<number> {
  return deleteBatch(storage, (db) =>
    finished(db)
      .where("automation_id", "=", automationId)
      .where((eb) => eb(eb.refTuple("created_at", "id"), "<=", eb.tuple(cut.created_at, cut.id)))
      .orderBy("created_at")
      .orderBy("id")
      .limit(limit),
  );
}

/** A page of automation ids after `after` (exclusive), in id order: what the count is kept per. */
export async function automationIdsAfter(storage: Storage, after: string, limit: number): Promise<string[]> {
  const rows = await storage.db.selectFrom("automations").select("id").where("id", ">", after).orderBy("id").limit(limit).execute();
  return rows.map((r) => r.id);
}
