// Migration 0006_idempotency_records. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

// Idempotency-Key records: one per caller and key, claimed by a unique key across instances.
export const m0006 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("idempotency_records")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("fingerprint", text, (c) => c.notNull())
      .addColumn("owner", text, (c) => c.notNull())
      .addColumn("locked_until", text)
      .addColumn("answer", text)
      .addColumn("created_at", text, (c) => c.notNull())
      .execute();
    await db.schema.createIndex("idempotency_records_by_age").on("idempotency_records").columns(["created_at"]).execute();
  },
});
