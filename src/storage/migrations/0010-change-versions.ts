// Migration 0010_change_versions. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

// Issue 16: one version row per kind of cached state (first: "principals", what an access token's
// check reads), bumped in the transaction of every change to it; each instance polls the rows it
// caches and drops what it holds when one moves (src/storage/change-versions.ts).
export const m0010 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("change_versions")
      .addColumn("name", text, (c) => c.primaryKey())
      .addColumn("version", "bigint", (c) => c.notNull())
      .execute();
    await db.insertInto("change_versions").values({ name: "principals", version: 0 }).execute();
  },
});
