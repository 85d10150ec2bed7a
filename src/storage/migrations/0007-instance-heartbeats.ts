// Migration 0007_instance_heartbeats. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

// One row per running instance, refreshed every few seconds: how many share the rate limits.
export const m0007 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("instance_heartbeats")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("started_at", text, (c) => c.notNull())
      .addColumn("last_seen", text, (c) => c.notNull())
      .execute();
  },
});
