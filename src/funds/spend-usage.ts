// The accounting of one subject, one app and one spend window: spent (captured less reversed, a
// counter on the window's usage row) and held (the unexpired pending holds, summed from their
// partial index at the instant asked). GetEffective and every spend operation read it here, and
// every change in a window first locks that window's usage row here.
import { expressionBuilder, sql, type ExpressionBuilder } from "kysely";
import { prepared } from "../storage/prepared.js";
import type { Database } from "../storage/schema.js";
import type { Db } from "../storage/transactions.js";
import { fromNanos, toNanos } from "./money.js";
import type { EffectiveLimit, Money } from "./types.js";

/** A window of one subject and one app. */
export interface WindowKey {
  userId: string;
  appId: string;
  /** ISO instants, as stored. */
  windowStart: string;
  windowEnd: string;
}

export interface Usage {
  spent: bigint;
  held: bigint;
}

// The statements of the hot path (every decision and change), compiled once (../storage/prepared.ts).
const lockStatement = prepared((db, v: WindowKey) =>
  db
    .insertInto("spend_usage")
    .values({ user_id: v.userId, app_id: v.appId, window_start: v.windowStart, window_end: v.windowEnd, spent_nanos: sql<bigint>`0` })
    .onConflict((oc) => oc.columns(["user_id", "app_id", "window_start"]).doUpdateSet((eb) => ({ window_end: eb.ref("excluded.window_end") })))
    .returning(sql<string>`cast(spent_nanos as text)`.as("spent")),
);

const addSpentStatement = prepared((db, v: WindowKey & { delta: bigint }) =>
  db
    .updateTable("spend_usage")
    .set({ spent_nanos: sql`spent_nanos + ${v.delta}` })
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_start", "=", v.windowStart),
);

/** A window's rows are keyed by its start: the usage row and the holds alike. */
type WindowStart = Pick<WindowKey, "userId" | "appId" | "windowStart">;

/** The Kysely instance, or an expression builder for a subquery. */
type From = Pick<ExpressionBuilder<Database, never>, "selectFrom">;

/** The sum of the window's pending holds unexpired at `now`, as text. */
const heldQuery = (from: From, v: WindowStart & { now: string }) =>
  from
    .selectFrom("spend_authorizations")
    // The literal matches the partial index spend_authorizations_held.
    .select(sql<string>`cast(coalesce(sum(amount_nanos), 0) as text)`.as("held"))
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_start", "=", v.windowStart)
    .where(sql<boolean>`state = 'PENDING'`)
    .where("expires_at", ">", v.now);

/** The window's spent counter as text; no row when nothing was ever spent or held in it. */
const spentQuery = (from: From, v: WindowStart) =>
  from
    .selectFrom("spend_usage")
    .select(sql<string>`cast(spent_nanos as text)`.as("spent"))
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_start", "=", v.windowStart);

const heldStatement = prepared((db, v: WindowKey & { now: string }) => heldQuery(db, v));

/**
 * Locks the window's usage row (creating it) until the transaction ends, and answers what it has
 * spent. On PostgreSQL the upsert takes the row lock in one round trip, and every later statement
 * of the transaction (READ COMMITTED) sees what the previous holder committed; on SQLite the write
 * transaction (BEGIN IMMEDIATE) already excludes every other writer.
 */
export async function lockUsage(db: Db, key: WindowKey): Promise<bigint> {
  const { rows } = await lockStatement.execute(db, key);
  if (!rows[0]) throw new Error("the usage upsert returned no row");
  return BigInt(rows[0].spent);
}

/** PostgreSQL: the lock and the held sum in one round trip (spend_lock_window, migration 0009). */
const lockWindowStatement = prepared((db, v: WindowKey & { now: string }) =>
  db.selectFrom(sql<Usage>`spend_lock_window(${v.userId}, ${v.appId}, ${v.windowStart}, ${v.windowEnd}, ${v.now})`.as("w")).select([sql<string>`w.spent`.as("spent"), sql<string>`w.held`.as("held")]),
);

/**
 * Locks the window's usage row as `lockUsage` does and answers its usage at `nowIso`, the holds
 * summed after the lock: on PostgreSQL in one round trip (a function whose second statement takes
 * its own snapshot, after the lock), on SQLite as two statements under the write lock.
 */
export async function lockWindow(db: Db, dialect: "sqlite" | "postgres", key: WindowKey, nowIso: string): Promise<Usage> {
  if (dialect === "sqlite") return { spent: await lockUsage(db, key), held: await heldIn(db, key, nowIso) };
  const { rows } = await lockWindowStatement.execute(db, { ...key, now: nowIso });
  if (!rows[0]) throw new Error("spend_lock_window returned no row");
  return { spent: BigInt(rows[0].spent), held: BigInt(rows[0].held) };
}

/** Adds `delta` (negative for a reversal) to the spent counter of a window whose row this transaction has locked. */
export async function addSpent(db: Db, key: WindowKey, delta: bigint): Promise<void> {
  await addSpentStatement.execute(db, { ...key, delta });
}

/** The sum of the window's pending holds unexpired at `nowIso`. */
export async function heldIn(db: Db, key: WindowKey, nowIso: string): Promise<bigint> {
  const { rows } = await heldStatement.execute(db, { ...key, now: nowIso });
  return BigInt(rows[0]?.held ?? "0");
}

/**
 * The window's usage at `v.now` read without a lock, as the columns `${name}_spent` and
 * `${name}_held` (scalar subqueries) of a statement that reads more: GetEffective reads the layers
 * and every candidate window's usage in one statement, one snapshot. `usageOf` reads them back.
 */
export const usageColumns = <N extends string>(name: N, v: WindowStart & { now: string }) => {
  const eb = expressionBuilder<Database, never>();
  return [spentQuery(eb, v).as(`${name}_spent`), heldQuery(eb, v).as(`${name}_held`)] as const;
};

/** The usage of the `usageColumns` named `name` in `row` (no usage row: nothing spent). */
export function usageOf(row: Record<string, unknown>, name: string): Usage {
  const spent = row[`${name}_spent`] as string | null;
  const held = row[`${name}_held`] as string | null;
  return { spent: BigInt(spent ?? "0"), held: BigInt(held ?? "0") };
}

/** The amount an amount decision caps the window at, else null (unlimited, deny). */
export function amountLimit(effective: EffectiveLimit): bigint | null {
  if (effective.decision !== "EFFECTIVE_DECISION_LIMIT") return null;
  const money: Money | null | undefined = effective.limit?.amount?.money;
  // An amount arm without money never passes the controls' validation; it caps at nothing.
  return money ? toNanos(money) : 0n;
}

export type SpendUsageView = {
  windowStart: string;
  windowEnd: string;
  spent: Money;
  held: Money;
  limit: Money | null;
  remaining: Money | null;
};

/** The contract's SpendUsage: `remaining` never below zero, null with `limit` when no amount limit is in force. */
export function usageView(key: WindowKey, usage: Usage, limit: bigint | null, currencyCode: string): SpendUsageView {
  const remaining = limit === null ? null : limit - usage.spent - usage.held;
  return {
    windowStart: key.windowStart,
    windowEnd: key.windowEnd,
    spent: fromNanos(usage.spent, currencyCode),
    held: fromNanos(usage.held, currencyCode),
    limit: limit === null ? null : fromNanos(limit, currencyCode),
    remaining: remaining === null ? null : fromNanos(remaining > 0n ? remaining : 0n, currencyCode),
  };
}
