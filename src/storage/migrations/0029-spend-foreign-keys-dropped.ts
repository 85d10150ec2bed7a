// Migration 0029_spend_foreign_keys_dropped. Frozen once released: a change is a new migration.
// The release before: two foreign keys dropped (PostgreSQL; nothing on SQLite): it runs.
import { type Kysely, type Migration, sql } from "kysely";

// Two foreign keys every decision paid for (bench/RESULTS.md, "Every index on the hot insert paths") that guard
// nothing a writer can break: users are never deleted, and every decision reads its user's row in
// the read it decides on (404 USER_NOT_FOUND); a ledger entry is written only by the functions that
// insert or lock its authorization in the same transaction. SQLite keeps them: dropping a foreign
// key there rebuilds the table, and its check is one probe of a B-tree the insert already holds.
export const m0029 = (dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== "postgres") return;
    await sql`alter table spend_authorizations drop constraint spend_authorizations_user_id_fkey`.execute(db);
    await sql`alter table spend_ledger drop constraint spend_ledger_authorization_id_fkey`.execute(db);
  },
});
