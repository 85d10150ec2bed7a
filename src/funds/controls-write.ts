// A read-modify-write of one live controls row (a subject-app limit, an app cap) under the row's
// exclusive lock and the fund policy's shared one (the currency its money is checked against holds
// until commit). SQLite, or a caller's transaction: the read, the change and the write in one write
// transaction. PostgreSQL: the read, then one call of write_controls_row that takes the locks and
// writes only if the currency and the row are still as read; when either changed, or the write
// records more (`written`), as that transaction. docs/benchmarks.md, "What the profiles led to".
import { sql } from "kysely";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import { writeTransaction, type Db, type WriteOptions } from "../storage/transactions.js";
import { insertAudit } from "../audit/audit-record.js";
import type { AuditEventsTable } from "../storage/schema.js";
import { FUND_POLICY_LOCK } from "./fund-policy.js";

export interface ControlsRow {
  id: string;
  controls: string;
}

export interface ControlsRowAccess<Row extends ControlsRow> {
  table: "subject_app_limits" | "app_caps";
  /** The row's exclusive lock key. */
  lock: string;
  tenantId: string;
  /** The live row and the fund currency, as `db` sees them. */
  read(db: Db): Promise<{ row: Row | undefined; currency: string }>;
  /**
   * Called in the transaction after a write, with the row as read and as written: what the write
   * records with it (its fund events). Set, the change always runs as a transaction.
   */
  written?(db: Db, seen: Row | undefined, row: Row): Promise<void>;
}

/** What a change of the row decides: its answer, the whole row to write (none: nothing changes), and the audit event recording it. */
export interface Planned<Row, T> {
  answer: T;
  write?: Row;
  audit?: AuditEventsTable | null;
}

/**
 * Reads the live row, plans its change, and writes what the plan says: inserted when no row was
 * live, else the live row updated to it. `plan` is pure and may run twice. `outer` joins the caller's transaction.
 */
export async function changeControlsRow<Row extends ControlsRow, T>(
  storage: Storage,
  access: ControlsRowAccess<Row>,
  plan: (row: Row | undefined, currency: string) => Planned<Row, T>,
  writing: WriteOptions = {},
): Promise<T> {
  if (storage.dialect === "postgres" && !writing.outer && !access.written) {
    const { row, currency } = await access.read(storage.db);
    const planned = plan(row, currency);
    if (!planned.write || (await writeIfUnchanged(storage.db, access, currency, row, planned))) return planned.answer;
  }
  return writeTransaction(storage, { exclusive: [access.lock], shared: [FUND_POLICY_LOCK] }, async (db) => {
    const { row, currency } = await access.read(db);
    const planned = plan(row, currency);
    if (planned.write) {
      await write(db, access.table, row, planned.write);
      await insertAudit(db, planned.audit ?? null);
      await access.written?.(db, row, planned.write);
    }
    return planned.answer;
  }, writing);
}

interface GuardedWrite {
  table: string;
  lock: string;
  policyLock: string;
  tenantId: string;
  currency: string;
  seenControls: string | null;
  row: string;
}

// The live key (second argument) is no longer read: the function spells out each table's (kept in its
// signature for an instance of an earlier release during a rolling upgrade).
const guardedWrite = (v: GuardedWrite) => sql<boolean>`write_controls_row(${v.table}, '{}'::text[], ${v.lock}, ${v.policyLock}, ${v.tenantId}, ${v.currency}, ${v.seenControls}, ${v.row}::jsonb)`;

const guardedWriteStatement = prepared((db, v: GuardedWrite) => db.selectNoFrom(guardedWrite(v).as("written")));

/** The same write and its audit event in one statement, so they commit together: the event is inserted only when the row was written. */
const guardedWriteAuditedStatement = prepared((db, v: GuardedWrite & { audit: string }) =>
  db
    .with("w", (w) => w.selectNoFrom(guardedWrite(v).as("written")))
    .with("a", (w) =>
      w
        .insertInto("audit_events")
        .expression((e) => e.selectFrom(sql<AuditEventsTable>`jsonb_populate_record(null::audit_events, ${v.audit}::jsonb)`.as("r")).innerJoin("w", (j) => j.onTrue()).where("w.written", "=", true).selectAll("r"))
        .returning("id"),
    )
    .selectFrom("w")
    .select("written"),
);

async function writeIfUnchanged<Row extends ControlsRow, T>(db: Db, access: ControlsRowAccess<Row>, currency: string, seen: Row | undefined, planned: Planned<Row, T>): Promise<boolean> {
  const values = {
    table: access.table,
    lock: access.lock,
    policyLock: FUND_POLICY_LOCK,
    tenantId: access.tenantId,
    currency,
    seenControls: seen?.controls ?? null,
    row: JSON.stringify(planned.write),
  };
  const { rows } = planned.audit
    ? await guardedWriteAuditedStatement.execute(db, { ...values, audit: JSON.stringify(planned.audit) })
    : await guardedWriteStatement.execute(db, values);
  return rows[0]?.written === true;
}

async function write<Row extends ControlsRow>(db: Db, table: ControlsRowAccess<Row>["table"], seen: Row | undefined, row: Row): Promise<void> {
  // `row` is a row of `table`, as the caller built it for that table.
  if (!seen) {
    await db.insertInto(table).values(row as never).execute();
    return;
  }
  const { id, ...columns } = row;
  await db.updateTable(table).set(columns as never).where("id", "=", id).execute();
}
