// Spend authorization rows as read (amounts as exact decimal strings, never JS numbers) and as
// answered (SpendAuthorization): the state is answered as of now, a pending hold past its expiry
// being EXPIRED whether or not anything has marked it.
import { sql, type SelectQueryBuilder } from "kysely";
import type { components } from "../../generated/api.js";
import type { Database, SpendAuthorizationsTable } from "../storage/schema.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import type { Db } from "../storage/transactions.js";
import { fromNanos } from "./money.js";
import { insertEntry, type LedgerEntry } from "./spend-ledger.js";
import type { WindowKey } from "./spend-usage.js";

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
/** An authorization's columns and, prefixed `entry_`, those of its first ledger entry. */
type InsertedWithEntry = Inserted & { [K in keyof LedgerEntry as `entry_${K}`]: LedgerEntry[K] };

const authorizationValues = (v: Inserted) => ({
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
});

const insertStatement = prepared((db, v: Inserted) => db.insertInto("spend_authorizations").values(authorizationValues(v)));

/** PostgreSQL: the authorization and its first ledger entry in one statement (one round trip under the window's lock). */
const insertWithEntryStatement = prepared((db, v: InsertedWithEntry) =>
  db
    .with("created", (qc) => qc.insertInto("spend_authorizations").values(authorizationValues(v)).returning("id"))
    .insertInto("spend_ledger")
    .values({
      id: v.entry_id,
      authorization_id: v.entry_authorization_id,
      user_id: v.entry_user_id,
      app_id: v.entry_app_id,
      window_start: v.entry_window_start,
      kind: v.entry_kind,
      amount_nanos: v.entry_amount_nanos,
      at: v.entry_at,
    }),
);

/** Inserts a new authorization and, when it has one, its first ledger entry. */
export async function insertAuthorization(storage: Storage, db: Db, row: SpendRow, entry: LedgerEntry | null): Promise<void> {
  const { amount, captured, reversed, ...columns } = row;
  const inserted: Inserted = { ...columns, amount_nanos: amount, captured_nanos: captured, reversed_nanos: reversed };
  if (entry && storage.dialect === "postgres") {
    const prefixed = Object.fromEntries(Object.entries(entry).map(([k, value]) => [`entry_${k}`, value])) as InsertedWithEntry;
    await insertWithEntryStatement.execute(db, { ...prefixed, ...inserted });
    return;
  }
  await insertStatement.execute(db, inserted);
  if (entry) await insertEntry.execute(db, entry);
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
