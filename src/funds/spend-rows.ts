// Spend authorization rows as read (amounts as exact decimal strings, never JS numbers) and as
// answered (SpendAuthorization): the state is answered as of now, a pending hold past its expiry
// being EXPIRED whether or not anything has marked it.
import { sql, type SelectQueryBuilder } from "kysely";
import type { components } from "../../generated/api.js";
import type { Database, SpendAuthorizationsTable } from "../storage/schema.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import type { BeforeCommit, Db } from "../storage/transactions.js";
import { fromNanos } from "./money.js";
import { insertEntry, type LedgerEntry } from "./spend-ledger.js";
import { addSpent, type WindowKey } from "./spend-usage.js";

export type SpendAuthorization = components["schemas"]["SpendAuthorization"];
export type StoredState = "PENDING" | "CAPTURED" | "RELEASED" | "DECLINED";
export type AnsweredState = `SPEND_AUTHORIZATION_STATE_${StoredState | "EXPIRED"}`;

/** A row as the domain holds it: the table's columns, amounts as exact bigints, the state narrowed. */
export type SpendRow = Omit<SpendAuthorizationsTable, "amount_nanos" | "captured_nanos" | "reversed_nanos" | "state"> & {
  amount: bigint;
  captured: bigint;
  reversed: bigint;
  state: StoredState;
};

type Selected = Omit<SpendAuthorizationsTable, "amount_nanos" | "captured_nanos" | "reversed_nanos"> & { amount: string; captured: string; reversed: string };

/** Every column, the amounts cast to text: SQLite answers an integer past 2^53 as a rounded JS number otherwise. */
export function selectRows(db: Db): SelectQueryBuilder<Database, "spend_authorizations", Selected> {
  return db
    .selectFrom("spend_authorizations")
    .select(["id", "user_id", "app_id", "currency_code", "state", "expires_at", "window_start", "window_end", "decision", "metadata", "created_at", "updated_at"])
    .select([
      sql<string>`cast(amount_nanos as text)`.as("amount"),
      sql<string>`cast(captured_nanos as text)`.as("captured"),
      sql<string>`cast(reversed_nanos as text)`.as("reversed"),
    ]);
}

export const toRow = (r: Selected): SpendRow => ({
  ...r,
  state: r.state as StoredState,
  amount: BigInt(r.amount),
  captured: BigInt(r.captured),
  reversed: BigInt(r.reversed),
});

const byIdStatement = prepared((db, v: { id: string }) => selectRows(db).where("id", "=", v.id));

export async function rowById(db: Db, id: string): Promise<SpendRow | undefined> {
  const { rows } = await byIdStatement.execute(db, { id });
  return rows[0] && toRow(rows[0]);
}

/** An authorization's columns as inserted. */
type Inserted = Omit<SpendRow, "amount" | "captured" | "reversed"> & { amount_nanos: bigint; captured_nanos: bigint; reversed_nanos: bigint };

const insertStatement = prepared((db, v: Inserted) =>
  db.insertInto("spend_authorizations").values({
    id: v.id,
    user_id: v.user_id,
    app_id: v.app_id,
    currency_code: v.currency_code,
    amount_nanos: v.amount_nanos,
    captured_nanos: v.captured_nanos,
    reversed_nanos: v.reversed_nanos,
    state: v.state,
    expires_at: v.expires_at,
    window_start: v.window_start,
    window_end: v.window_end,
    decision: v.decision,
    metadata: v.metadata,
    created_at: v.created_at,
    updated_at: v.updated_at,
  }),
);

/** The bindings of spend_record_authorization: a new row, its first entry's and the kept answer's columns or nulls. */
type Recorded = SpendRow & {
  entry_id: string | null;
  entry_kind: string | null;
  entry_amount: bigint | null;
  entry_at: string | null;
  answer_id: string | null;
  answer_owner: string | null;
  answer_text: string | null;
};

/** PostgreSQL: all the writes of a new authorization in one round trip (migration 0011); the captured amount is the spent delta. */
const recordStatement = prepared((db, v: Recorded) =>
  db.selectNoFrom(
    sql<boolean>`spend_record_authorization(${v.id}, ${v.user_id}, ${v.app_id}, ${v.currency_code}, ${v.amount}, ${v.captured}, ${v.state}, ${v.expires_at},
      ${v.window_start}, ${v.window_end}, ${v.decision}, ${v.metadata}, ${v.created_at}, ${v.entry_id}, ${v.entry_kind}, ${v.entry_amount}, ${v.entry_at},
      ${v.captured}, ${v.answer_id}, ${v.answer_owner}, ${v.answer_text})`.as("kept"),
  ),
);

/**
 * Writes a new authorization (not yet reversed, updated when created): the row, its first ledger
 * entry when it has one, its captured amount added to the window's spent counter, and the request's
 * answer kept through `beforeCommit`. On PostgreSQL one round trip when the answer has a write
 * form; on SQLite one statement each, under the write lock.
 */
export async function recordAuthorization(storage: Storage, db: Db, row: SpendRow, entry: LedgerEntry | null, beforeCommit?: BeforeCommit<SpendAuthorization>): Promise<void> {
  const view = authorizationView(row, row.created_at);
  if (storage.dialect === "postgres") {
    const answer = beforeCommit?.asWrite?.(view);
    const { rows } = await recordStatement.execute(db, {
      ...row,
      entry_id: entry?.id ?? null,
      entry_kind: entry?.kind ?? null,
      entry_amount: entry?.amount_nanos ?? null,
      entry_at: entry?.at ?? null,
      answer_id: answer?.id ?? null,
      answer_owner: answer?.owner ?? null,
      answer_text: answer?.answer ?? null,
    });
    if (answer) answer.settle(rows[0]?.kept === true);
    else await beforeCommit?.(db, view);
    return;
  }
  const { amount, captured, reversed, ...columns } = row;
  await insertStatement.execute(db, { ...columns, amount_nanos: amount, captured_nanos: captured, reversed_nanos: reversed });
  if (entry) await insertEntry.execute(db, entry);
  if (captured > 0n) await addSpent(db, windowOf(row), captured);
  await beforeCommit?.(db, view);
}

export const windowOf = (row: SpendRow): WindowKey => ({ userId: row.user_id, appId: row.app_id, windowStart: row.window_start, windowEnd: row.window_end });

/** The state as of `nowIso`: a pending hold whose expiry has come is expired from that instant. */
export function answeredState(row: Pick<SpendRow, "state" | "expires_at">, nowIso: string): AnsweredState {
  if (row.state === "PENDING" && row.expires_at !== null && row.expires_at <= nowIso) return "SPEND_AUTHORIZATION_STATE_EXPIRED";
  return `SPEND_AUTHORIZATION_STATE_${row.state}`;
}

export function authorizationView(row: SpendRow, nowIso: string): SpendAuthorization {
  const money = (nanos: bigint) => fromNanos(nanos, row.currency_code);
  return {
    id: row.id,
    userId: row.user_id,
    appId: row.app_id,
    amount: money(row.amount),
    state: answeredState(row, nowIso),
    capturedAmount: money(row.captured),
    reversedAmount: money(row.reversed),
    expiresAt: row.expires_at,
    windowStart: row.window_start,
    windowEnd: row.window_end,
    decision: JSON.parse(row.decision) as SpendAuthorization["decision"],
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
