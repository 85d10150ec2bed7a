// Removes audit events older than AUDIT_RETENTION_DAYS, when an operator sets it (by default they
// are kept). Oldest first, in batches of one statement each: a range of the primary key, whose ids
// are time-ordered, so a batch reads only what it removes.
import type { Clock } from "../core/clock.js";
import type { Storage } from "../storage/connect.js";
import { writeStatement } from "../storage/transactions.js";
import { firstAuditIdAt } from "./audit-ids.js";

const DAY_MS = 86_400_000;
const BATCH = 1_000;
/** Batches per sweep: a sweep stays short, and the next one carries on. */
const BATCHES_PER_SWEEP = 20;

/** Removes what is past `days` as of now; answers how many it removed. */
export async function pruneAuditEvents(storage: Storage, clock: Clock, days: number): Promise<number> {
  const before = firstAuditIdAt(clock.now() - days * DAY_MS);
  let removed = 0;
  for (let i = 0; i < BATCHES_PER_SWEEP; i++) {
    const batch = await writeStatement(storage, async (db) => {
      const oldest = db.selectFrom("audit_events").select("id").where("id", "<", before).orderBy("id").limit(BATCH);
      const result = await db.deleteFrom("audit_events").where("id", "in", oldest).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
    removed += batch;
    if (batch < BATCH) break;
  }
  return removed;
}
