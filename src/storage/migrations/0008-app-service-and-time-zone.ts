// Migration 0008_app_service_and_time_zone. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

// Issue 15: an app service credential's apps (`[]` for the credentials before it, none of which
// was of an app service), and the fund policy's time zone (UTC for the tenants before it).
export const m0008 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("credentials").addColumn("app_ids", text, (c) => c.notNull().defaultTo("[]")).execute();
    await db.schema.alterTable("fund_policy").addColumn("time_zone", text, (c) => c.notNull().defaultTo("UTC")).execute();
  },
});
