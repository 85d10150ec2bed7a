// Migration 0024_notification_secrets. Frozen once released: a change is a new migration.
// The release before: a table it does not know of: it runs. (An automation saved with a `notify`
// step by the later release is a step kind it does not know: it cannot show or run that automation,
// which it could not have made; its other automations are unaffected.)
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

/**
 * The signing secrets of automations' `notify` steps (src/automations/notification-secrets.ts), sealed
 * with SECRETS_KEY and bound to their automation: the current one (expires_at null) and the one a
 * rotation replaced, which keeps signing beside it until expires_at.
 */
export const m0024 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("notification_secrets")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("automation_id", text, (c) => c.notNull())
      .addColumn("sealed", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("expires_at", text)
      .execute();
    await db.schema.createIndex("notification_secrets_by_automation").on("notification_secrets").columns(["automation_id", "created_at"]).execute();
  },
});
