// The accounting of one subject, one app and one spend window, on the window's usage row: spent
// (captured less reversed, a counter) and held (the unexpired pending holds: a counter of those
// expiring after `held_through`, kept by triggers as holds are written, corrected at the instant
// asked by the holds between the two; see migration 0016). GetEffective and every spend operation
// read it here, and every change in a window first locks that window's usage row here.
import { expressionBuilder, sql, type Expression, type ExpressionBuilder } from "kysely";
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

/** The Kysely instance, or an expression builder for a subquery. */
type From = Pick<ExpressionBuilder<Database, never>, "selectFrom">;

/** A window's key as values, or as the columns of an outer query's row. */
type KeyOf = { [K in keyof WindowKey]: string | Expression<string> };

/**
 * The sum of the window's pending holds that expire after `after` and no later than `until` (a
 * number: cast it to text before it reaches JS): one range of the partial index
 * spend_authorizations_held.
 */
const holdsExpiringQuery = (from: From, v: KeyOf, after: Expression<string>, until: Expression<string>) =>
  from
    .selectFrom("spend_authorizations")
    .select(sql<bigint>`coalesce(sum(amount_nanos), 0)`.as("sum"))
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_start", "=", v.windowStart)
    .where("window_end", "=", v.windowEnd)
    // The literal matches the partial index's condition.
    .where(sql<boolean>`state = 'PENDING'`)
    .where("expires_at", ">", after)
    .where("expires_at", "<=", until);

const value = (v: string) => sql<string>`${v}`;

// The statements of SQLite's hot path (every decision and change), compiled once
// (../storage/prepared.ts). PostgreSQL runs the same steps in functions (migrations 0012, 0016).

/** The window's lock: an upsert, creating the row, answering its counters. */
const lockStatement = prepared((db, v: WindowKey) =>
  db
    .insertInto("spend_usage")
    .values({ user_id: v.userId, app_id: v.appId, window_start: v.windowStart, window_end: v.windowEnd, spent_nanos: sql<bigint>`0` })
    .onConflict((oc) => oc.columns(["user_id", "app_id", "window_start", "window_end"]).doUpdateSet((eb) => ({ held_through: eb.ref("spend_usage.held_through") })))
    .returning([sql<string>`cast(spent_nanos as text)`.as("spent"), sql<string>`cast(held_nanos as text)`.as("held"), "held_through"]),
);

/** The holds expiring after `after` and no later than `until`. */
const holdsBetweenStatement = prepared((db, v: WindowKey & { after: string; until: string }) =>
  db.selectNoFrom(sql<string>`cast((${holdsExpiringQuery(db, v, value(v.after), value(v.until))}) as text)`.as("held")),
);

/** The sweep: `swept` (the holds expired by `now`) out of the counter, which then counts from `now`. */
const sweepStatement = prepared((db, v: WindowKey & { swept: bigint; now: string }) =>
  db
    .updateTable("spend_usage")
    .set({ held_nanos: sql`held_nanos - ${v.swept}`, held_through: v.now })
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_start", "=", v.windowStart)
    .where("window_end", "=", v.windowEnd),
);

/** A capture's or reversal's change of the window's spent counter (the held counter is kept by triggers, migration 0016). */
const addSpentStatement = prepared((db, v: WindowKey & { delta: bigint }) =>
  db
    .updateTable("spend_usage")
    .set({ spent_nanos: sql`spent_nanos + ${v.delta}` })
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_start", "=", v.windowStart)
    .where("window_end", "=", v.windowEnd),
);

const holdsBetween = async (db: Db, key: WindowKey, after: string, until: string) =>
  BigInt((await holdsBetweenStatement.execute(db, { ...key, after, until })).rows[0]?.held ?? "0");

/**
 * Locks the window's usage row (creating it) until the transaction ends, and answers its usage at
 * `nowIso`: the held counter less the holds expired since `held_through` (swept out of it, when
 * there are any: until then the counter is exact as it is), or, for a clock behind it, plus those
 * unexpired at `nowIso` that a sweep took out. On PostgreSQL one round trip (spend_lock_window,
 * migration 0016) whose statements after the lock each take their own snapshot, so they see every
 * hold the lock's previous holder committed; on SQLite the write transaction (BEGIN IMMEDIATE)
 * already excludes every other writer, and the same steps are statements of their own.
 */
export async function lockWindow(db: Db, dialect: "sqlite" | "postgres", key: WindowKey, nowIso: string): Promise<Usage> {
  if (dialect === "postgres") {
    const { rows } = await lockWindowStatement.execute(db, { ...key, now: nowIso });
    if (!rows[0]) throw new Error("spend_lock_window returned no row");
    return { spent: BigInt(rows[0].spent), held: BigInt(rows[0].held) };
  }
  const { rows } = await lockStatement.execute(db, key);
  const row = rows[0];
  if (!row) throw new Error("the usage upsert returned no row");
  const spent = BigInt(row.spent);
  const held = BigInt(row.held);
  if (row.held_through > nowIso) return { spent, held: held + (await holdsBetween(db, key, nowIso, row.held_through)) };
  const swept = await holdsBetween(db, key, row.held_through, nowIso);
  if (swept !== 0n) await sweepStatement.execute(db, { ...key, swept, now: nowIso });
  return { spent, held: held - swept };
}

/** SQLite: locks the window's usage row (creating it) until the transaction ends, for a change: it needs no usage. */
export async function lockUsage(db: Db, key: WindowKey): Promise<void> {
  await lockStatement.execute(db, key);
}

/** PostgreSQL: spend_lock_window (migration 0016). */
const lockWindowStatement = prepared((db, v: WindowKey & { now: string }) =>
  db.selectFrom(sql<Usage>`spend_lock_window(${v.userId}, ${v.appId}, ${v.windowStart}, ${v.windowEnd}, ${v.now})`.as("w")).select([sql<string>`w.spent`.as("spent"), sql<string>`w.held`.as("held")]),
);

/** SQLite: adds `delta` (negative for a reversal) to the spent counter of a window whose row this transaction has locked. */
export async function addSpent(db: Db, key: WindowKey, delta: bigint): Promise<void> {
  await addSpentStatement.execute(db, { ...key, delta });
}

/**
 * The window's usage at `v.now` read without a lock, as the column `${name}_usage` (a scalar
 * subquery answering "<spent> <held>") of a statement that reads more: GetEffective reads the
 * layers and every candidate window's usage in one statement, one snapshot. `usageOf` reads it
 * back. The held amount is the counter corrected by the holds between `held_through` and `now`:
 * less those expired since, or, for a clock behind it, plus those a sweep took out; one range of
 * the held index, between the lesser and the greater of the two instants.
 */
export const usageColumn = <N extends string>(name: N, v: WindowKey & { now: string }) => {
  const eb = expressionBuilder<Database, never>();
  const through = sql.ref<string>("spend_usage.held_through");
  const now = value(v.now);
  const after = sql<string>`case when ${through} < ${now} then ${through} else ${now} end`;
  const until = sql<string>`case when ${through} < ${now} then ${now} else ${through} end`;
  // Correlated with the usage row: its key, not four parameters more per window.
  const row = { userId: sql.ref<string>("spend_usage.user_id"), appId: sql.ref<string>("spend_usage.app_id"), windowStart: sql.ref<string>("spend_usage.window_start"), windowEnd: sql.ref<string>("spend_usage.window_end") };
  const correction = holdsExpiringQuery(eb, row, after, until);
  const usage = sql<string>`cast(spent_nanos as text) || ' ' || cast(held_nanos + case when ${through} < ${now} then -1 else 1 end * (${correction}) as text)`;
  return eb.selectFrom("spend_usage").select(usage.as("u")).where("user_id", "=", v.userId).where("app_id", "=", v.appId).where("window_start", "=", v.windowStart).where("window_end", "=", v.windowEnd).as(`${name}_usage`);
};

/** The usage of the `usageColumn` named `name` in `row` (no usage row: nothing spent or held). */
export function usageOf(row: Record<string, unknown>, name: string): Usage {
  const [spent = "0", held = "0"] = ((row[`${name}_usage`] as string | null) ?? "").split(" ").filter(Boolean);
  return { spent: BigInt(spent), held: BigInt(held) };
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
