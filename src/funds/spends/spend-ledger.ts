// The spend ledger: one append-only entry per effect on an authorization. Rows are never updated
// or removed; an authorization's amounts are the sums of its entries (a chaos check compares them
// with the usage the API reports).
import { timeOrderedId } from "../../core/ids.js";
import { prepared } from "../../storage/prepared.js";
import type { SpendLedgerTable } from "../../storage/schema.js";
import type { WindowKey } from "./spend-usage.js";

/**
 * HOLD: an approved pending amount; CAPTURE: posted as spent (the hold ends); RELEASE: a hold, or
 * the rest of it after a partial capture, voided; REVERSAL: a refund of a captured amount.
 * An expired hold has no entry: it stops counting at its expiresAt.
 */
export type LedgerKind = "HOLD" | "CAPTURE" | "RELEASE" | "REVERSAL";

/** A ledger row as inserted (the amount a BigInt of nanos). */
export type LedgerEntry = Omit<SpendLedgerTable, "amount_nanos"> & { amount_nanos: bigint };

export function ledgerEntry(authorizationId: string, window: WindowKey, kind: LedgerKind, amount: bigint, now: number): LedgerEntry {
  return {
    id: timeOrderedId(now, 12),
    authorization_id: authorizationId,
    user_id: window.userId,
    app_id: window.appId,
    window_start: window.windowStart,
    kind,
    amount_nanos: amount,
    at: new Date(now).toISOString(),
  };
}

/** The entry's insert, compiled once (../storage/prepared.ts); on SQLite (PostgreSQL writes entries in ./spend-writes.ts's functions). */
export const insertEntry = prepared((db, v: LedgerEntry) =>
  db.insertInto("spend_ledger").values({
    id: v.id,
    authorization_id: v.authorization_id,
    user_id: v.user_id,
    app_id: v.app_id,
    window_start: v.window_start,
    kind: v.kind,
    amount_nanos: v.amount_nanos,
    at: v.at,
  }),
);
