// The writes of a spend decision or change under its window's lock, where the dialects differ. SQLite:
// one statement each, under the database's write lock. PostgreSQL: a decision or change decided on
// what was read before its lock is one function call, a transaction by itself, that checks under the
// lock what it was decided on and writes it with the kept answer (`authorizeInOneCall`,
// `changeInOneCall`); in a transaction otherwise (a lock held, a check failed, fund events to record).
// Why: docs/spends.md, "How a spend is decided and counted".
import { sql, type RawBuilder } from "kysely";
import type { Storage } from "../../storage/connect.js";
import { keepInsertBound, keptBindings, type KeptBindings } from "../../storage/idempotency-records.js";
import { prepared, type Prepared } from "../../storage/prepared.js";
import { writeStatement, writeTransaction, type AnswerWrite, type BeforeCommit, type Db } from "../../storage/transactions.js";
import type { Origin } from "../../core/origin.js";
import { insertEntry, ledgerEntry, type LedgerEntry, type LedgerKind } from "./spend-ledger.js";
import { rowById, toRow, windowOf, type Selected, type SpendAuthorization, type SpendRow, type StoredState } from "./spend-rows.js";
import { addSpent, type Usage, type WindowKey } from "./spend-usage.js";
import type { FundPolicyTable } from "../../storage/schema.js";

/** What a change of an authorization writes; none when it changes nothing (a release of a released hold). */
export interface ChangeWrites {
  /** The columns it sets (besides updated_at). */
  set: { state?: StoredState; captured?: bigint; reversed?: bigint };
  /** Its ledger entries, in order: one, or two for a partial capture (CAPTURE, then RELEASE of the rest). */
  entries: { kind: LedgerKind; amount: bigint }[];
  /** Added to the window's spent counter. */
  spent: bigint;
}

/**
 * Runs PostgreSQL write `plain` with `values`, or, when `beforeCommit` keeps an answer, `keeping`:
 * the same write with the kept record's insert in the same statement (`spendCall`). Without an
 * insert form the answer is kept by its own statement.
 */
async function withAnswer<V extends object, T>(
  db: Db,
  view: T,
  beforeCommit: BeforeCommit<T> | undefined,
  write: { plain: Prepared<V, unknown>; keeping: Prepared<V & KeptBindings, { kept: unknown }> },
  values: V,
): Promise<void> {
  const answer = beforeCommit?.asWrite?.(view);
  if (!answer) {
    await write.plain.execute(db, values);
    return beforeCommit?.(db, view);
  }
  const { rows } = await write.keeping.execute(db, { ...values, ...keptBindings(answer.record) });
  answer.settle(Number(rows[0]?.kept) === 1);
}

/**
 * A PostgreSQL function call `call` as `plain` and `keeping` statements for `withAnswer`. The
 * functions' own answer arguments (spend_settle's update of a claimed record, for an instance of an
 * earlier release) are null: this release inserts the record in the statement's CTE instead.
 */
function spendCall<V extends object>(call: (v: V) => RawBuilder<boolean>) {
  return {
    plain: prepared((db, v: V) => db.selectNoFrom(call(v).as("recorded"))),
    keeping: prepared((db, v: V & KeptBindings) =>
      db.with("kept_answer", (qc) => keepInsertBound(qc, v).returning("id")).selectNoFrom([call(v).as("recorded"), sql<number>`(select count(*) from kept_answer)`.as("kept")]),
    ),
  };
}

const insertStatement = prepared((db, v: SpendRow) =>
  db.insertInto("spend_authorizations").values({
    id: v.id,
    user_id: v.user_id,
    app_id: v.app_id,
    currency_code: v.currency_code,
    amount_nanos: v.amount,
    captured_nanos: v.captured,
    reversed_nanos: v.reversed,
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

type Recorded = SpendRow & { entry_id: string | null; entry_kind: string | null; entry_amount: bigint | null; entry_at: string | null };

/** PostgreSQL: spend_record_authorization; the captured amount is the spent delta. */
const recordCall = spendCall(
  (v: Recorded) =>
    sql<boolean>`spend_record_authorization(${v.id}, ${v.user_id}, ${v.app_id}, ${v.currency_code}, ${v.amount}, ${v.captured}, ${v.state}, ${v.expires_at},
      ${v.window_start}, ${v.window_end}, ${v.decision}, ${v.metadata}, ${v.created_at}, ${v.entry_id}, ${v.entry_kind}, ${v.entry_amount}, ${v.entry_at},
      ${v.captured}, ${null}, ${null}, ${null})`,
);

/**
 * Writes a new authorization (not yet reversed, updated when created): the row, its first ledger
 * entry when it has one, its captured amount added to the window's spent counter, and `view` kept
 * as the request's answer through `beforeCommit`.
 */
export async function recordAuthorization(storage: Storage, db: Db, row: SpendRow, entry: LedgerEntry | null, view: SpendAuthorization, beforeCommit?: BeforeCommit<SpendAuthorization>): Promise<void> {
  if (storage.dialect === "postgres") {
    const entryBindings = { entry_id: entry?.id ?? null, entry_kind: entry?.kind ?? null, entry_amount: entry?.amount_nanos ?? null, entry_at: entry?.at ?? null };
    return withAnswer(db, view, beforeCommit, recordCall, { ...row, ...entryBindings });
  }
  await insertStatement.execute(db, row);
  if (entry) await insertEntry.execute(db, entry);
  if (row.captured > 0n) await addSpent(db, row.user_id, row.app_id, row.created_at, row.captured);
  await beforeCommit?.(db, view);
}

/** PostgreSQL: spend_lock_row, run with its values inlined so that it carries the transaction's BEGIN. */
const lockRowStatement = prepared((db, v: WindowKey & { id: string }) =>
  db.selectFrom(sql<Selected>`spend_lock_row(${v.userId}, ${v.appId}, ${v.windowStart}, ${v.windowEnd}, ${v.id})`.as("r")).selectAll(),
);

/**
 * Takes the subject-app's spend lock until the transaction ends (on SQLite the write transaction
 * holds it already), then reads authorization `id` as it is after the lock (a concurrent change may
 * have committed meanwhile).
 */
export async function lockedRow(storage: Storage, db: Db, window: WindowKey, id: string): Promise<SpendRow | undefined> {
  if (storage.dialect === "sqlite") return rowById(db, id);
  const { rows } = await lockRowStatement.executeInlined(db, { ...window, id });
  return rows[0] && toRow(rows[0]);
}

type Changed = {
  id: string;
  state: string;
  captured: bigint;
  reversed: bigint;
  at: string;
  user_id: string;
  app_id: string;
  window_start: string;
  window_end: string;
  first_id: string;
  first_kind: string;
  first_amount: bigint;
  second_id: string | null;
  second_kind: string | null;
  second_amount: bigint | null;
  spent: bigint;
};

/** PostgreSQL: spend_record_change. */
const changeCall = spendCall(
  (v: Changed) =>
    sql<boolean>`spend_record_change(${v.id}, ${v.state}, ${v.captured}, ${v.reversed}, ${v.at}, ${v.user_id}, ${v.app_id}, ${v.window_start}, ${v.window_end},
      ${v.first_id}, ${v.first_kind}, ${v.first_amount}, ${v.second_id}, ${v.second_kind}, ${v.second_amount}, ${v.spent}, ${null}, ${null}, ${null})`,
);

/**
 * Writes a change of authorization `row` (as it becomes, updated at `now`) and keeps `view` as the
 * request's answer through `beforeCommit`.
 */
export async function recordChange(storage: Storage, db: Db, row: SpendRow, writes: ChangeWrites | null, now: number, view: SpendAuthorization, beforeCommit?: BeforeCommit<SpendAuthorization>): Promise<void> {
  const window = windowOf(row);
  const entries = (writes?.entries ?? []).map((e) => ledgerEntry(row.id, window, e.kind, e.amount, now));
  const [first, second] = entries;
  if (!writes || !first) return beforeCommit?.(db, view);
  if (storage.dialect === "postgres") {
    if (entries.length > 2) throw new Error("spend_record_change takes at most two ledger entries");
    const columns = { id: row.id, state: row.state, captured: row.captured, reversed: row.reversed, at: row.updated_at, user_id: row.user_id, app_id: row.app_id, window_start: row.window_start, window_end: row.window_end };
    const ledger = { first_id: first.id, first_kind: first.kind, first_amount: first.amount_nanos, second_id: second?.id ?? null, second_kind: second?.kind ?? null, second_amount: second?.amount_nanos ?? null };
    return withAnswer(db, view, beforeCommit, changeCall, { ...columns, ...ledger, spent: writes.spent });
  }
  const { state, captured, reversed } = writes.set;
  await db
    .updateTable("spend_authorizations")
    .set({ state, captured_nanos: captured, reversed_nanos: reversed, updated_at: row.updated_at })
    .where("id", "=", row.id)
    .execute();
  for (const entry of entries) await insertEntry.execute(db, entry);
  if (writes.spent !== 0n) await addSpent(db, row.user_id, row.app_id, row.created_at, writes.spent);
  await beforeCommit?.(db, view);
}

/** A kept answer's bindings, all null when there is no answer to keep. */
type MaybeKept = { [K in keyof KeptBindings]: KeptBindings[K] | null };

type OneCallChange = Changed & { was_state: string; was_captured: bigint; was_reversed: bigint } & MaybeKept & { wait: boolean };

/** PostgreSQL: spend_change (src/storage/postgres-functions.sql). */
const oneCallChange = prepared((db, v: OneCallChange) =>
  db.selectNoFrom(
    sql<"changed" | "stale" | "busy" | "taken">`spend_change(${v.id}, ${v.user_id}, ${v.app_id}, ${v.window_start}, ${v.window_end}, ${v.was_state}, ${v.was_captured}, ${v.was_reversed},
      ${v.state}, ${v.captured}, ${v.reversed}, ${v.at}, ${v.first_id}, ${v.first_kind}, ${v.first_amount}, ${v.second_id}, ${v.second_kind}, ${v.second_amount}, ${v.spent},
      ${v.kept_id}, ${v.kept_fingerprint}, ${v.kept_owner}, ${v.kept_answer}, ${v.kept_created_at}, ${v.kept_retained}, ${v.wait})`.as("outcome"),
  ),
);

/**
 * A one-call statement on `db`: the pool, where it is a transaction by itself and takes only free
 * locks; or a transaction, where it waits for them, its values inlined so that it carries the BEGIN.
 * Never a call that waits in autocommit: it would commit after a connection lost while it waited.
 */
function oneCall<V extends { wait: boolean }, R>(statement: Prepared<V, R>, db: Db, values: (wait: boolean) => V) {
  const wait = db.isTransaction;
  return wait ? statement.executeInlined(db, values(wait)) : statement.execute(db, values(wait));
}

const NO_ANSWER: MaybeKept = { kept_id: null, kept_fingerprint: null, kept_owner: null, kept_answer: null, kept_created_at: null, kept_retained: null };

/**
 * PostgreSQL: change `was` (the row as read before any lock) into `row` with `writes`, and keep
 * `answer`, in one round trip (spend_change, a transaction by itself): the lock if it is free, the
 * check that the row is still `was`, then the writes. False, with nothing written, when the lock is
 * held or the row changed meanwhile: the caller decides again under the lock in a transaction
 * (`lockedRow`). Settles `answer`.
 */
export async function changeInOneCall(storage: Storage, was: SpendRow, row: SpendRow, writes: ChangeWrites, now: number, answer: AnswerWrite | undefined, origin?: Origin): Promise<boolean> {
  const window = windowOf(row);
  const [first, second, ...more] = writes.entries.map((e) => ledgerEntry(row.id, window, e.kind, e.amount, now));
  if (!first || more.length > 0) throw new Error("spend_change takes one or two ledger entries");
  const kept = answer ? keptBindings(answer.record) : NO_ANSWER;
  // One literal of every value: objects made by spreads of this many fields are costly to build
  // (bench/RESULTS.md, "The least a correct decision does").
  const values = (wait: boolean): OneCallChange => ({
    id: row.id,
    user_id: row.user_id,
    app_id: row.app_id,
    window_start: row.window_start,
    window_end: row.window_end,
    was_state: was.state,
    was_captured: was.captured,
    was_reversed: was.reversed,
    state: row.state,
    captured: row.captured,
    reversed: row.reversed,
    at: row.updated_at,
    first_id: first.id,
    first_kind: first.kind,
    first_amount: first.amount_nanos,
    second_id: second?.id ?? null,
    second_kind: second?.kind ?? null,
    second_amount: second?.amount_nanos ?? null,
    spent: writes.spent,
    kept_id: kept.kept_id,
    kept_fingerprint: kept.kept_fingerprint,
    kept_owner: kept.kept_owner,
    kept_answer: kept.kept_answer,
    kept_created_at: kept.kept_created_at,
    kept_retained: kept.kept_retained,
    wait,
  });
  const change = async (db: Db) => (await oneCall(oneCallChange, db, values)).rows[0]?.outcome;
  let outcome = await writeStatement(storage, change, origin);
  // A lock held: the same call in a transaction, which waits for it (two round trips, BEGIN with the call).
  if (outcome === "busy") outcome = await writeTransaction(storage, { exclusive: [] }, change, { origin });
  if (outcome === "stale" || outcome === "busy") return false;
  answer?.settle(outcome === "changed");
  return true;
}

/** The controls of the live subject-app row and app cap, as stored (null: no such row). */
export interface LayerControls {
  row: string | null;
  cap: string | null;
}

/**
 * What a one-call decision is checked against under its locks: the policy's row and the window's
 * usage it was decided on; and the layers, when they were not read with the usage just before.
 */
export interface DecidedOn {
  policy: FundPolicyTable;
  usage: Usage;
  layers?: LayerControls;
}

/**
 * What became of a one-call decision: recorded, or not because a lock was held ("busy"), or the
 * policy, the layers or the usage (as it is now) is not what it was decided on.
 */
export type OneCallDecision = { outcome: "recorded" } | { outcome: "busy" } | { outcome: "policy" } | { outcome: "layers" } | { outcome: "usage"; usage: Usage };

type OneCallAuthorize = Pick<SpendRow, "id" | "user_id" | "app_id" | "amount" | "captured" | "state" | "expires_at" | "window_start" | "window_end" | "decision" | "metadata" | "created_at"> & {
  lock: string;
  tenant_id: string;
  policy_currency: string;
  time_zone: string;
  default_controls: string | null;
  policy_updated_at: string | null;
} & {
  spent: bigint;
  held: bigint;
  counted: bigint;
  entry_id: string | null;
  entry_kind: string | null;
  entry_amount: bigint | null;
} & MaybeKept & { wait: boolean; check_layers: boolean; row_controls: string | null; cap_controls: string | null };

/** PostgreSQL: spend_authorize (src/storage/postgres-functions.sql). */
const oneCallAuthorize = prepared((db, v: OneCallAuthorize) =>
  db
    .selectFrom(
      sql<{ outcome: "recorded" | "busy" | "policy" | "layers" | "usage" | "taken"; spent: string | null; held: string | null; counted: string | null }>`spend_authorize(${v.lock}, ${v.tenant_id}, ${v.policy_currency}, ${v.time_zone}, ${v.default_controls}, ${v.policy_updated_at},
        ${v.spent}, ${v.held}, ${v.created_at}, ${v.id}, ${v.user_id}, ${v.app_id}, ${v.amount}, ${v.captured}, ${v.state}, ${v.expires_at}, ${v.window_start}, ${v.window_end},
        ${v.decision}, ${v.metadata}, ${v.entry_id}, ${v.entry_kind}, ${v.entry_amount},
        ${v.kept_id}, ${v.kept_fingerprint}, ${v.kept_owner}, ${v.kept_answer}, ${v.kept_created_at}, ${v.kept_retained}, ${v.wait}, ${v.check_layers}, ${v.row_controls}, ${v.cap_controls}, ${v.counted})`.as("d"),
    )
    .selectAll(),
);

/**
 * PostgreSQL: records new authorization `row` (made at its created_at, not yet reversed) with its
 * first ledger entry and `answer` by one call (spend_authorize): under the policy's shared lock
 * (`lock`) and the window's, if the policy, the layers (when `on` has them) and the window's usage
 * are still `on`; else nothing is written. `db`: the pool, where the call is a transaction by itself and takes only free locks
 * ("busy" when one is held); or a transaction, where it waits for them. Settles `answer`.
 */
export async function authorizeInOneCall(db: Db, lock: string, on: DecidedOn, row: SpendRow, entry: LedgerEntry | null, answer: AnswerWrite | undefined): Promise<OneCallDecision> {
  const { policy } = on;
  const kept = answer ? keptBindings(answer.record) : NO_ANSWER;
  // One literal of every value: objects made by spreads of this many fields are costly to build
  // (bench/RESULTS.md, "The least a correct decision does").
  const { rows } = await oneCall(oneCallAuthorize, db, (wait) => ({
    id: row.id,
    user_id: row.user_id,
    app_id: row.app_id,
    amount: row.amount,
    captured: row.captured,
    state: row.state,
    expires_at: row.expires_at,
    window_start: row.window_start,
    window_end: row.window_end,
    decision: row.decision,
    metadata: row.metadata,
    created_at: row.created_at,
    lock,
    tenant_id: policy.tenant_id,
    policy_currency: policy.currency_code,
    time_zone: policy.time_zone,
    default_controls: policy.default_controls,
    policy_updated_at: policy.updated_at,
    spent: on.usage.spent,
    held: on.usage.held,
    counted: on.usage.count,
    entry_id: entry?.id ?? null,
    entry_kind: entry?.kind ?? null,
    entry_amount: entry?.amount_nanos ?? null,
    kept_id: kept.kept_id,
    kept_fingerprint: kept.kept_fingerprint,
    kept_owner: kept.kept_owner,
    kept_answer: kept.kept_answer,
    kept_created_at: kept.kept_created_at,
    kept_retained: kept.kept_retained,
    wait,
    check_layers: on.layers !== undefined,
    row_controls: on.layers?.row ?? null,
    cap_controls: on.layers?.cap ?? null,
  }));
  const found = rows[0];
  if (!found) throw new Error("spend_authorize returned no row");
  if (found.outcome === "policy" || found.outcome === "busy" || found.outcome === "layers") return { outcome: found.outcome };
  if (found.outcome === "usage") return { outcome: "usage", usage: { spent: BigInt(found.spent ?? "0"), held: BigInt(found.held ?? "0"), count: BigInt(found.counted ?? "0") } };
  answer?.settle(found.outcome === "recorded");
  return { outcome: "recorded" };
}
