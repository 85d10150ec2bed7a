// Migration 0033_webhook_sender_kinds. Frozen once released: a change is a new migration.
// The release before: nullable columns it does not know of, and listener methods it does not
// (`standardWebhooks`, `github`, `stripe`): it has no route to their URLs (404), verifies a
// delivery to the seed's URL of such a listener as JWT and refuses it (401), and shows such a
// trigger as `hmac`; rows it writes leave the columns null: it runs.
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

/** A Standard Webhooks listener's Ed25519 public key (`whpk_...`), and the type of each received event. */
export const m0033 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("webhook_listeners").addColumn("public_key", text).execute();
    await db.schema.alterTable("webhook_events").addColumn("event_type", text).execute();
  },
});
