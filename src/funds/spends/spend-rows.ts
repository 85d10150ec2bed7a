// Spend authorization rows as read (amounts as exact decimal strings, never JS numbers) and as
// answered (SpendAuthorization): the state is answered as of now, a pending hold past its expiry
// being EXPIRED whether or not anything has marked it.
import { sql, type SelectQueryBuilder } from "kysely";
import type { components } from "../../../generated/api.js";
import { clipText } from "../../core/storable-text.js";
import type { Database, SpendAuthorizationsTable } from "../../storage/schema.js";
import { prepared } from "../../storage/prepared.js";
import type { Db } from "../../storage/transactions.js";
import { fromNanos } from "../money.js";
import { MAX_TRACE_LINE } from "../resolve.js";
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

/** The columns `selectRows` answers. */
export type Selected = Omit<SpendAuthorizationsTable, "amount_nanos" | "captured_nanos" | "reversed_nanos"> & { amount: string; captured: string; reversed: string };

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

/** Authorization `id` as Authorize answered it when it was decided (a replay's answer), whatever happened to it since. */
export async function asAuthorizedIn(db: Db, id: string): Promise<SpendAuthorization> {
  const row = await rowById(db, id);
  if (!row) throw new Error(`spend authorization ${id} vanished`);
  return authorizationView(asCreated(row), row.created_at);
}

/**
 * The row as its decision created it. Later changes set its state, captured and reversed amounts
 * and update time, never its expiry: a decision left it PENDING exactly when it gave it an expiry,
 * DECLINED stays, and any other approved one was captured whole at once (Authorize with `capture`).
 */
export function asCreated(row: SpendRow): SpendRow {
  const state: StoredState = row.expires_at !== null ? "PENDING" : row.state === "DECLINED" ? "DECLINED" : "CAPTURED";
  return { ...row, state, captured: state === "CAPTURED" ? row.amount : 0n, reversed: 0n, updated_at: row.created_at };
}

export const windowOf = (row: SpendRow): WindowKey => ({ userId: row.user_id, appId: row.app_id, windowStart: row.window_start, windowEnd: row.window_end });

/** The state as of `nowIso`: a pending hold whose expiry has come is expired from that instant. */
export function answeredState(row: Pick<SpendRow, "state" | "expires_at">, nowIso: string): AnsweredState {
  if (row.state === "PENDING" && row.expires_at !== null && row.expires_at <= nowIso) return "SPEND_AUTHORIZATION_STATE_EXPIRED";
  return `SPEND_AUTHORIZATION_STATE_${row.state}`;
}

/**
 * The authorization as answered at `nowIso`. `parsed`: its decision and metadata as the objects the
 * row's JSON columns were written from, when the caller has them (a new authorization), so that
 * they are not parsed back.
 */
export function authorizationView(row: SpendRow, nowIso: string, parsed?: Pick<SpendAuthorization, "decision" | "metadata">): SpendAuthorization {
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
    decision: parsed?.decision ?? storedDecision(row.decision),
    metadata: parsed?.metadata ?? (JSON.parse(row.metadata) as Record<string, string>),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * A stored decision as answered. A release that clipped a quoted reason before escaping it stored
 * trace lines longer than the contract's bound (a reason of control characters): they are clipped.
 */
function storedDecision(json: string): SpendAuthorization["decision"] {
  const decision = JSON.parse(json) as SpendAuthorization["decision"];
  decision.trace = decision.trace.map((line) => clipText(line, MAX_TRACE_LINE));
  return decision;
}
