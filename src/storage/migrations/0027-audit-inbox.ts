// Migration 0027_audit_inbox. Frozen once released: a change is a new migration.
// The release before: a table (SQLite) or a view (PostgreSQL) it does not know of: it runs,
// recording its changes into audit_events itself. On SQLite its lists do not show the events still
// in the inbox, which an instance of this release moves into audit_events within a second.
import { type Kysely, type Migration, sql } from "kysely";
import { createAuditTable, type TextType } from "./migration-kit.js";

/**
 * The audit inbox, where every change records its event (src/audit/audit-record.ts).
 * - SQLite: a table. An event is an append to its two B-trees, in the change's transaction; the
 *   server moves the inbox into audit_events, with its six filter indexes, in batches
 *   (src/audit/audit-inbox.ts), so that an index page a batch touches is written once for the batch
 *   rather than once per commit. Lists read both. Append-only as the trail is: rows leave it only by
 *   the move, which inserts them into audit_events in the same transaction.
 * - PostgreSQL: a view of audit_events that inserts write through, straight into the trail (an
 *   index costs little there next to a change's round trips: bench/RESULTS.md, "The audit record").
 */
export const m0027 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect === "postgres") {
      await sql`create view audit_inbox as select * from audit_events`.execute(db);
      return;
    }
    await createAuditTable(db, text, "audit_inbox");
    await sql`create trigger audit_inbox_append_only before update on audit_inbox begin select raise(abort, 'audit events are append-only'); end`.execute(db);
  },
});
