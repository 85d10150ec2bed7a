// Migration 0032_notification_signing_keys. Frozen once released: a change is a new migration.
// The release before: a table it does not know of: it runs. (An automation saved by the later
// release with an Ed25519 `notify` step is a field its contract does not know: its response
// validation, off in production, refuses to show it, and it signs that step with HMAC.)
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

/**
 * The Ed25519 key pairs of automations' `notify` steps signed `v1a,`
 * (src/automations/notification-signing-keys.ts), one per automation: the private key sealed with
 * SECRETS_KEY and bound to its automation, the public key as it is published.
 */
export const m0032 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("notification_signing_keys")
      .addColumn("automation_id", text, (c) => c.primaryKey())
      .addColumn("sealed", text, (c) => c.notNull())
      .addColumn("public_key", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .execute();
  },
});
