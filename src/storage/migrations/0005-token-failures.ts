// Migration 0005_token_failures. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

// The token endpoint's failure counts, shared by every instance on the database.
export const m0005 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("token_failures")
      .addColumn("key", text, (c) => c.primaryKey())
      .addColumn("attempts", text, (c) => c.notNull())
      .addColumn("last_at", text, (c) => c.notNull())
      .execute();
    await db.schema.createIndex("token_failures_by_age").on("token_failures").columns(["last_at"]).execute();
  },
});
