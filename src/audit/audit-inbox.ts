// On SQLite a change records its audit event into the inbox, an append in its own transaction, and
// the server moves the inbox into audit_events here in batches, so that events sharing a target,
// user, app, actor or operation share the index pages the batch writes once (recorded straight into
// the trail, every event wrote a page of each filter index). The move is one transaction: an event
// is in the inbox or the trail, never both nor neither; lists read both (./audit-trail.ts). On
// PostgreSQL the inbox is a view writing through. Why: bench/RESULTS.md, "The audit record".
import type { Storage } from "../storage/connect.js";
import type { AuditEventsTable } from "../storage/schema.js";
import { writeTransaction } from "../storage/transactions.js";

/** Events moved by one transaction at most: a move holds the server's thread for a few milliseconds, not more. */
const MOVE_BATCH = 2_000;
/** Transactions one call makes at most: a call ends even while changes keep filling the inbox, and the next carries on. */
const BATCHES_PER_CALL = 10;

/** Every column, named: the migrations make the two tables alike, and a copy by name stays right if they ever are not. */
const COLUMNS = ["id", "operation_id", "target_kind", "target_id", "target_user_id", "target_app_id", "actor_kind", "actor_user_id", "actor_credential_id", "actor_automation_id", "actor_execution_id", "actor_event_id", "request_id", "before_state", "after_state", "created_at"] as const satisfies readonly (keyof AuditEventsTable)[];

/** Moves the oldest events of the inbox (MOVE_BATCH at most) into the trail; answers how many it moved. */
function moveBatch(storage: Storage): Promise<number> {
  return writeTransaction(storage, { exclusive: [] }, async (db) => {
    // The write transaction holds the database's write lock: the inbox does not change under it.
    const last = await db.selectFrom("audit_inbox").select("id").orderBy("id").offset(MOVE_BATCH - 1).limit(1).executeTakeFirst();
    const selected = db.selectFrom("audit_inbox").select(COLUMNS);
    await db.insertInto("audit_events").columns(COLUMNS).expression(last ? selected.where("id", "<=", last.id) : selected).execute();
    const removing = db.deleteFrom("audit_inbox");
    const removed = await (last ? removing.where("id", "<=", last.id) : removing).executeTakeFirst();
    return Number(removed.numDeletedRows);
  });
}

export interface InboxMove {
  moved: number;
  /** The inbox was emptied: the last batch was not full (a full one may have left events behind). */
  caughtUp: boolean;
}

/** Moves what the inbox holds into the trail, a batch a transaction. Nothing on PostgreSQL. */
export async function moveAuditInbox(storage: Storage): Promise<InboxMove> {
  if (storage.dialect !== "sqlite") return { moved: 0, caughtUp: true };
  // An empty inbox is found without the write lock: an idle server takes none every second.
  if (!(await storage.db.selectFrom("audit_inbox").select("id").limit(1).executeTakeFirst())) return { moved: 0, caughtUp: true };
  let total = 0;
  for (let i = 0; i < BATCHES_PER_CALL; i++) {
    const moved = await moveBatch(storage);
    total += moved;
    if (moved < MOVE_BATCH) return { moved: total, caughtUp: true };
  }
  return { moved: total, caughtUp: false };
}
