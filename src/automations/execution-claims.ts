// Claiming runnable executions, where the dialects differ: each runnable execution goes to exactly
// one worker. A claim takes runs whose lease lapsed (after a crash, or given back after a fault)
// first, then parked executions that are due, up to half of what is left, then pending ones shared
// among the automations that have any, in turn (so that one automation's backlog does not delay
// another's fresh events), then due parked ones again. A worker that stops gives back what it
// claimed and has not begun to run, so that no other worker waits for the lease.
import { CompiledQuery, sql, type Expression, type ExpressionBuilder, type SqlBool } from "kysely";
import type { KnownAutomationExecutionState } from "../../generated/enums.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationExecutionsTable, Database } from "../storage/schema.js";
import { writeStatement, writeTransaction, type Db } from "../storage/transactions.js";

const PENDING: KnownAutomationExecutionState = "AUTOMATION_EXECUTION_STATE_PENDING";
const RUNNING: KnownAutomationExecutionState = "AUTOMATION_EXECUTION_STATE_RUNNING";
const PARKED: KnownAutomationExecutionState = "AUTOMATION_EXECUTION_STATE_PARKED";

type Runnable = (eb: ExpressionBuilder<Database, "automation_executions">) => Expression<SqlBool>;

/**
 * What is runnable, each kind a seek in an index kept in its order: runs whose lease lapsed
 * ((state, created_at, id)), pending and due parked executions (partial indexes, their state as a
 * literal, for SQLite to use them).
 */
const lapsed = (now: string): Runnable => (eb) => eb.and([eb("state", "=", RUNNING), eb("lease_until", "<", now)]);
const pending: Runnable = () => sql<SqlBool>`state = ${sql.lit(PENDING)}`;
const dueParked = (now: string): Runnable => (eb) => eb.and([sql<SqlBool>`state = ${sql.lit(PARKED)}`, eb("next_attempt_at", "<=", now)]);

/**
 * Claims up to `limit` runnable executions, each leased until `leaseUntil`, oldest first. `after`:
 * the automation whose pending executions the last claim took last (`turnAfter`); this claim's turn
 * among automations begins after it.
 */
export async function claimExecutions(storage: Storage, now: string, leaseUntil: string, limit: number, after = ""): Promise<AutomationExecutionsTable[]> {
  // SQLite: the write lock of BEGIN IMMEDIATE serializes claimers across processes.
  const claimed =
    storage.dialect === "postgres"
      ? await claimOnPostgres(storage.db, now, leaseUntil, limit, after)
      : await writeTransaction(storage, { exclusive: ["automation_executions:claim"] }, async (db) => claimIds(db, await chooseOnSqlite(db, now, limit, after), leaseUntil));
  return claimed.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
}

/** The automation a claim's turn ended with: the last, in turn order from `after`, of those whose pending executions it took. */
export function turnAfter(claimed: readonly AutomationExecutionsTable[], after: string): string {
  const turn = (id: string) => [id > after ? 0 : 1, id] as const;
  let last: string | undefined;
  for (const { automation_id: id, attempts, next_attempt_at } of claimed) {
    // Pending ones only: a lapsed run's claim is its second at least, and a parked one keeps its next_attempt_at.
    if (attempts !== 1 || next_attempt_at) continue;
    if (last === undefined || turn(id) > turn(last)) last = id;
  }
  return last ?? after;
}

const ids = async (query: { execute(): Promise<Array<{ id: string }>> }) => (await query.execute()).map((r) => r.id);

/** The same choice as PostgreSQL's claim_executions function, a seek at a time: in-process on SQLite. */
async function chooseOnSqlite(db: Db, now: string, limit: number, after: string): Promise<string[]> {
  const queue = db.selectFrom("automation_executions").select("id");
  const chosen = await ids(queue.where(lapsed(now)).orderBy("created_at").orderBy("id").limit(limit));
  const parked = (count: number) => ids(queue.where(dueParked(now)).where("id", "not in", chosen.length > 0 ? chosen : [""]).orderBy("next_attempt_at").orderBy("id").limit(count));
  if (chosen.length < limit) chosen.push(...(await parked(Math.ceil((limit - chosen.length) / 2))));
  const automations = await automationsInTurn(db, after, limit - chosen.length);
  const ofAutomation = (automation: string, count: number) =>
    ids(queue.where(pending).where("automation_id", "=", automation).where("id", "not in", chosen.length > 0 ? chosen : [""]).orderBy("created_at").orderBy("id").limit(count));
  const share = Math.ceil((limit - chosen.length) / Math.max(automations.length, 1));
  for (const automation of automations) chosen.push(...(await ofAutomation(automation, Math.min(share, limit - chosen.length))));
  for (const automation of automations) if (chosen.length < limit) chosen.push(...(await ofAutomation(automation, limit - chosen.length)));
  if (chosen.length < limit) chosen.push(...(await parked(limit - chosen.length)));
  return chosen;
}

/** Up to `count` automations with pending executions, in id order from the one after `after`, wrapping around once. */
async function automationsInTurn(db: Db, after: string, count: number): Promise<string[]> {
  const found: string[] = [];
  let from = after;
  let wrapped = false;
  while (found.length < count) {
    const next = await db.selectFrom("automation_executions").select("automation_id").where(pending).where("automation_id", ">", from).orderBy("automation_id").limit(1).executeTakeFirst();
    if (!next) {
      if (wrapped || after === "") break;
      wrapped = true;
      from = "";
      continue;
    }
    if (wrapped && next.automation_id > after) break;
    found.push(next.automation_id);
    from = next.automation_id;
  }
  return found;
}

function claimIds(db: Db, chosen: string[], leaseUntil: string): Promise<AutomationExecutionsTable[]> {
  if (chosen.length === 0) return Promise.resolve([]);
  return db
    .updateTable("automation_executions")
    .set((eb) => ({ state: RUNNING, lease_until: leaseUntil, attempts: eb("attempts", "+", 1) }))
    .where("id", "in", chosen)
    .returningAll()
    .execute();
}

/**
 * How many executions are runnable now (pending, due parked, or their run's lease lapsed), counted
 * up to `cap`: each kind is a seek in an index, so the count reads `cap` index entries at most.
 */
export async function countRunnable(db: Db, now: string, cap: number): Promise<number> {
  let count = 0;
  for (const where of [lapsed(now), pending, dueParked(now)]) {
    if (count >= cap) break;
    const found = db.selectFrom("automation_executions").select("id").where(where).limit(cap - count).as("found");
    const row = await db.selectFrom(found).select((eb) => eb.fn.countAll<number | string>().as("n")).executeTakeFirstOrThrow();
    count += Number(row.n);
  }
  return count;
}

/** PostgreSQL: the claim_executions function, one round trip. */
async function claimOnPostgres(db: Db, now: string, leaseUntil: string, limit: number, after: string): Promise<AutomationExecutionsTable[]> {
  const result = await db.executeQuery<AutomationExecutionsTable>(CompiledQuery.raw("select * from claim_executions($1, $2, $3, $4)", [now, leaseUntil, limit, after]));
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
