// The accounting of one subject, app and spend window on the window's usage row: spent (captured less
// reversed) and held (a counter of the pending holds expiring after `held_through`, corrected at the
// instant asked), and the authorizations it counts (held_count, those holds; captured_count, its
// captured authorizations, reversed or not). A window counts every spend whose authorization
// instant lies in it: its row is seeded from them when created, then every change updates every row
// whose window holds its instant, under the subject-app's lock, so a row is never seeded while a
// change it would miss is in flight.
// Why: docs/spends.md, "How a spend is decided and counted".
import { expressionBuilder, sql, type Expression, type ExpressionBuilder } from "kysely";
import { timeOrderedPrefix } from "../../core/ids.js";
import { prepared } from "../../storage/prepared.js";
import type { Database } from "../../storage/schema.js";
import type { Db } from "../../storage/transactions.js";
import { fromNanos, toNanos } from "../money.js";
import type { EffectiveLimit, Money } from "../types.js";

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
  /** The authorizations counted: pending unexpired holds and captures. */
  count: bigint;
}

export const NOTHING_USED: Usage = { spent: 0n, held: 0n, count: 0n };

/** The Kysely instance, or an expression builder for a subquery. */
type From = Pick<ExpressionBuilder<Database, never>, "selectFrom">;

/** A window's key as values, or as the columns of an outer query's row. */
type KeyOf = { [K in keyof WindowKey]: string | Expression<string> };

/**
 * The sum and the count of the pending holds made in the window that expire after `after` and no
 * later than `until`, as one text "<sum> <count>": one range of the partial index
 * spend_authorizations_held.
 */
const holdsExpiringQuery = (from: From, v: KeyOf, after: Expression<string>, until: Expression<string>) =>
  from
    .selectFrom("spend_authorizations")
    .select(sql<string>`cast(coalesce(sum(amount_nanos), 0) as text) || ' ' || cast(count(*) as text)`.as("holds"))
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    // The literal matches the partial index's condition.
    .where(sql<boolean>`state = 'PENDING'`)
    .where("expires_at", ">", after)
    .where("expires_at", "<=", until)
    .where("created_at", ">=", v.windowStart)
    .where("created_at", "<", v.windowEnd);

const value = (v: string) => sql<string>`${v}`;

/** A usage row's counters as text, for `usageFrom`. */
const USAGE_COLUMNS = [
  sql<string>`cast(spent_nanos as text)`.as("spent"),
  sql<string>`cast(held_nanos as text)`.as("held"),
  sql<string>`cast(held_count + captured_count as text)`.as("count"),
] as const;

/** The counters as `USAGE_COLUMNS` reads them. */
const usageFrom = (row: { spent: string; held: string; count: string }): Usage => ({ spent: BigInt(row.spent), held: BigInt(row.held), count: BigInt(row.count) });

/** Holds as `holdsExpiringQuery` sums and counts them. */
const holdsFrom = (text: string | null | undefined): { held: bigint; count: bigint } => {
  const [held = "0", count = "0"] = (text ?? "").split(" ");
  return { held: BigInt(held), count: BigInt(count) };
};

// The statements of SQLite's hot path (every decision and change), compiled once
// (../storage/prepared.ts). PostgreSQL runs the same steps in functions (src/storage/postgres-functions.sql).

/** The window's counters. */
const readStatement = prepared((db, v: WindowKey) =>
  db
    .selectFrom("spend_usage")
    .select([...USAGE_COLUMNS, "held_through"])
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_start", "=", v.windowStart)
    .where("window_end", "=", v.windowEnd),
);

/**
 * What a window's row is seeded with at `now`: the sums of the authorizations made in it (ids are
 * time-ordered: the range of its instants is a range of spend_authorizations_by_user_app).
 */
const seedQuery = (from: From, v: WindowKey & { now: string; idFrom: string; idTo: string }) =>
  from
    .selectFrom("spend_authorizations")
    .select([
      sql<string>`${v.userId}`.as("user_id"),
      sql<string>`${v.appId}`.as("app_id"),
      sql<string>`${v.windowStart}`.as("window_start"),
      sql<string>`${v.windowEnd}`.as("window_end"),
      sql<bigint>`coalesce(sum(captured_nanos - reversed_nanos), 0)`.as("spent_nanos"),
      sql<bigint>`coalesce(sum(case when state = 'PENDING' and expires_at > ${v.now} then amount_nanos else 0 end), 0)`.as("held_nanos"),
      sql<string>`${v.now}`.as("held_through"),
      sql<bigint>`count(case when state = 'PENDING' and expires_at > ${v.now} then 1 end)`.as("held_count"),
      sql<bigint>`count(case when state = 'CAPTURED' then 1 end)`.as("captured_count"),
    ])
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("id", ">=", v.idFrom)
    .where("id", "<", v.idTo);

/** The window's row created as `seedQuery` sums it, counting from `now`. */
const seedStatement = prepared((db, v: WindowKey & { now: string; idFrom: string; idTo: string }) =>
  db
    .insertInto("spend_usage")
    .columns(["user_id", "app_id", "window_start", "window_end", "spent_nanos", "held_nanos", "held_through", "held_count", "captured_count"])
    .expression((eb) => seedQuery(eb, v))
    .returning(USAGE_COLUMNS),
);

/** What `seedStatement` would create the window's row with, read without writing it. */
const seedReadStatement = prepared((db, v: WindowKey & { now: string; idFrom: string; idTo: string }) =>
  db
    .selectFrom(seedQuery(db, v).as("seed"))
    .select([
      sql<string>`cast(seed.spent_nanos as text)`.as("spent"),
      sql<string>`cast(seed.held_nanos as text)`.as("held"),
      sql<string>`cast(seed.held_count + seed.captured_count as text)`.as("count"),
    ]),
);

/** Whether any authorization was made in the window (one probe of spend_authorizations_by_user_app). */
const anyMadeStatement = prepared((db, v: WindowKey & { idFrom: string; idTo: string }) =>
  db.selectFrom("spend_authorizations").select(sql<number>`1`.as("made")).where("user_id", "=", v.userId).where("app_id", "=", v.appId).where("id", ">=", v.idFrom).where("id", "<", v.idTo).limit(1),
);

/** The holds made in the window expiring after `after` and no later than `until`. */
const holdsBetweenStatement = prepared((db, v: WindowKey & { after: string; until: string }) => holdsExpiringQuery(db, v, value(v.after), value(v.until)));

/** The sweep: `swept` (the holds expired by `now`) out of the counters, which then count from `now`. */
const sweepStatement = prepared((db, v: WindowKey & { swept: bigint; sweptCount: bigint; now: string }) =>
  db
    .updateTable("spend_usage")
    .set({ held_nanos: sql`held_nanos - ${v.swept}`, held_count: sql`held_count - ${v.sweptCount}`, held_through: v.now })
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_start", "=", v.windowStart)
    .where("window_end", "=", v.windowEnd),
);

/**
 * A capture's or reversal's change of the spent counter of every window holding instant `at` (the
 * held counters are kept by triggers): one range of the primary key, the windows
 * ending after `at`.
 */
const addSpentStatement = prepared((db, v: { userId: string; appId: string; at: string; delta: bigint }) =>
  db
    .updateTable("spend_usage")
    .set({ spent_nanos: sql`spent_nanos + ${v.delta}` })
    .where("user_id", "=", v.userId)
    .where("app_id", "=", v.appId)
    .where("window_end", ">", v.at)
    .where("window_start", "<=", v.at),
);

const holdsBetween = async (db: Db, key: WindowKey, after: string, until: string) => holdsFrom((await holdsBetweenStatement.execute(db, { ...key, after, until })).rows[0]?.holds);

/** The range of time-ordered ids made in the window. */
const idRange = (key: WindowKey) => ({ idFrom: timeOrderedPrefix(Date.parse(key.windowStart)), idTo: timeOrderedPrefix(Date.parse(key.windowEnd)) });

/**
 * Takes the subject-app's spend lock until the transaction ends and answers the window's usage at
 * `nowIso`, creating its row (seeded from the authorizations made in it) when it has none: the held
 * counter less the holds expired since `held_through` (swept out of it, when there are any: until
 * then the counter is exact as it is), or, for a clock behind it, plus those unexpired at `nowIso`
 * that a sweep took out. On PostgreSQL one round trip (spend_lock_window) whose
 * statements after the lock each take their own snapshot, so they see every write the lock's
 * previous holder committed; on SQLite the write transaction (BEGIN IMMEDIATE) already excludes
 * every other writer, and the same steps are statements of their own.
 */
export async function lockWindow(db: Db, dialect: "sqlite" | "postgres", key: WindowKey, nowIso: string): Promise<Usage> {
  if (dialect === "postgres") {
    const { rows } = await lockWindowStatement.execute(db, { ...key, now: nowIso });
    if (!rows[0]) throw new Error("spend_lock_window returned no row");
    return usageFrom(rows[0]);
  }
  const row = (await readStatement.execute(db, key)).rows[0];
  if (!row) {
    const seeded = (await seedStatement.execute(db, { ...key, now: nowIso, ...idRange(key) })).rows[0];
    if (!seeded) throw new Error("the usage row's seed returned no row");
    return usageFrom(seeded);
  }
  const { spent, held, count } = usageFrom(row);
  if (row.held_through > nowIso) {
    const unswept = await holdsBetween(db, key, nowIso, row.held_through);
    return { spent, held: held + unswept.held, count: count + unswept.count };
  }
  const swept = await holdsBetween(db, key, row.held_through, nowIso);
  if (swept.count !== 0n) await sweepStatement.execute(db, { ...key, swept: swept.held, sweptCount: swept.count, now: nowIso });
  return { spent, held: held - swept.held, count: count - swept.count };
}

/** Whether any spend was made in the window: a window without its row and without spends has nothing spent or held. */
export async function anySpendIn(db: Db, key: WindowKey): Promise<boolean> {
  return (await anyMadeStatement.execute(db, { ...key, ...idRange(key) })).rows.length > 0;
}

/**
 * The usage at `nowIso` of a window without its row yet, read without a lock and without creating
 * the row: what a decision's lock would seed it with (a dry run's read).
 */
export async function unseededUsage(db: Db, key: WindowKey, nowIso: string): Promise<Usage> {
  const row = (await seedReadStatement.execute(db, { ...key, now: nowIso, ...idRange(key) })).rows[0];
  return row ? usageFrom(row) : NOTHING_USED;
}

/** PostgreSQL: spend_lock_window (src/storage/postgres-functions.sql). */
const lockWindowStatement = prepared((db, v: WindowKey & { now: string }) =>
  db
    .selectFrom(sql<{ spent: string; held: string; counted: string }>`spend_lock_window(${v.userId}, ${v.appId}, ${v.windowStart}, ${v.windowEnd}, ${v.now})`.as("w"))
    .select([sql<string>`w.spent`.as("spent"), sql<string>`w.held`.as("held"), sql<string>`w.counted`.as("count")]),
);

/** SQLite: adds `delta` (negative for a reversal) to the spent counter of every window of the subject and app holding instant `at`. */
export async function addSpent(db: Db, userId: string, appId: string, at: string, delta: bigint): Promise<void> {
  await addSpentStatement.execute(db, { userId, appId, at, delta });
}

/**
 * The window's usage at `v.now` read without a lock, as the column `${name}_usage` (a scalar
 * subquery answering "<spent> <held> <count> <sign> <holds' sum> <holds' count>", null when the
 * window has no row yet) of a statement that reads more: GetEffective reads the layers and every
 * candidate window's usage in one statement, one snapshot. `usageOf` reads it back. The held amount
 * and count are the counters corrected by the holds between `held_through` and `now`: less those
 * expired since (sign -1), or, for a clock behind it, plus those a sweep took out (sign 1); one
 * range of the held index, between the lesser and the greater of the two instants.
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
  const usage = sql<string>`cast(spent_nanos as text) || ' ' || cast(held_nanos as text) || ' ' || cast(held_count + captured_count as text) || ' ' || case when ${through} < ${now} then '-1' else '1' end || ' ' || (${correction})`;
  return eb.selectFrom("spend_usage").select(usage.as("u")).where("user_id", "=", v.userId).where("app_id", "=", v.appId).where("window_start", "=", v.windowStart).where("window_end", "=", v.windowEnd).as(`${name}_usage`);
};

/** The usage of the `usageColumn` named `name` in `row`; undefined when the window has no row yet. */
export function usageOf(row: Record<string, unknown>, name: string): Usage | undefined {
  const column = row[`${name}_usage`] as string | null | undefined;
  if (column === null || column === undefined) return undefined;
  const [spent = "0", held = "0", count = "0", sign = "1", holds = "0", holdsCount = "0"] = column.split(" ");
  const by = BigInt(sign);
  return { spent: BigInt(spent), held: BigInt(held) + by * BigInt(holds), count: BigInt(count) + by * BigInt(holdsCount) };
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
  authorizations: string;
  maxAuthorizations: number | null;
  authorizationsRemaining: number | null;
};

/** What a window's usage is shown against: its key, the amount limit and count in force, the fund currency. */
export interface UsageBounds {
  window: WindowKey;
  limit: bigint | null;
  maxAuthorizations: number | null;
  currencyCode: string;
}

/**
 * The contract's SpendUsage: `remaining` and `authorizationsRemaining` never below zero, each null
 * with its bound when none is in force.
 */
export function usageView({ window, limit, maxAuthorizations, currencyCode }: UsageBounds, usage: Usage): SpendUsageView {
  const remaining = limit === null ? null : limit - usage.spent - usage.held;
  const left = maxAuthorizations === null ? null : BigInt(maxAuthorizations) - usage.count;
  return {
    windowStart: window.windowStart,
    windowEnd: window.windowEnd,
    spent: fromNanos(usage.spent, currencyCode),
    held: fromNanos(usage.held, currencyCode),
    limit: limit === null ? null : fromNanos(limit, currencyCode),
    remaining: remaining === null ? null : fromNanos(remaining > 0n ? remaining : 0n, currencyCode),
    authorizations: String(usage.count),
    maxAuthorizations,
    authorizationsRemaining: left === null ? null : Number(left > 0n ? left : 0n),
  };
}
