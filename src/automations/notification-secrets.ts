// The signing secrets of automations' `notify` steps, one current per automation: made by the
// automation's first save with a `notify` step (or its first rotation), returned once, and stored
// only sealed with SECRETS_KEY, bound to the automation (a sealed secret copied onto another
// automation does not open). A rotation keeps the replaced secret signing beside the new one for
// the grace period, so a receiver can switch without refusing a notification.
import { randomBytes } from "node:crypto";
import type { Clock } from "../core/clock.js";
import { newId } from "../core/ids.js";
import type { Storage } from "../storage/connect.js";
import type { Sealed } from "../storage/secrets-key.js";
import type { Db } from "../storage/transactions.js";
import type { SecretBox } from "../webhooks/for-automations.js";

const PREFIX = "whsec_";

/** What a sealed secret is bound to. */
const context = (automationId: string) => `notification:${automationId}`;

/** One notification secret as sealed, for the secrets key's check at start. */
export async function sealedNotificationSecretSample(storage: Storage): Promise<Sealed | undefined> {
  const row = await storage.db.selectFrom("notification_secrets").select(["automation_id", "sealed"]).limit(1).executeTakeFirst();
  return row && { sealed: row.sealed, context: context(row.automation_id) };
}

/** The HMAC key of a `whsec_<base64>` secret: its decoded bytes (Standard Webhooks). */
export const signingKey = (secret: string): Buffer => Buffer.from(secret.slice(PREFIX.length), "base64");

export class NotificationSecrets {
  constructor(
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly graceSeconds: number,
  ) {}

  private iso(offsetMs = 0): string {
    return new Date(this.clock.now() + offsetMs).toISOString();
  }

  private async add(db: Db, automationId: string): Promise<string> {
    const secret = PREFIX + randomBytes(32).toString("base64");
    await db.insertInto("notification_secrets").values({ id: newId(), automation_id: automationId, sealed: this.box.seal(secret, context(automationId)), created_at: this.iso(), expires_at: null }).execute();
    return secret;
  }

  /** A first secret when the automation has none; null when it has one (it is never shown again). */
  async ensure(db: Db, automationId: string): Promise<string | null> {
    const current = await db.selectFrom("notification_secrets").select("id").where("automation_id", "=", automationId).where("expires_at", "is", null).executeTakeFirst();
    return current ? null : this.add(db, automationId);
  }

  /** A new current secret; the replaced one keeps signing for the grace period, older ones end now. */
  async rotate(db: Db, automationId: string): Promise<string> {
    await db.deleteFrom("notification_secrets").where("automation_id", "=", automationId).where("expires_at", "is not", null).execute();
    await db.updateTable("notification_secrets").set({ expires_at: this.iso(this.graceSeconds * 1000) }).where("automation_id", "=", automationId).where("expires_at", "is", null).execute();
    return this.add(db, automationId);
  }

  async remove(db: Db, automationId: string): Promise<void> {
    await db.deleteFrom("notification_secrets").where("automation_id", "=", automationId).execute();
  }

  /** The secrets a notification is signed with now, opened, current one first; empty when the automation has none. */
  async signing(db: Db, automationId: string): Promise<string[]> {
    const now = this.iso();
    const rows = await db
      .selectFrom("notification_secrets")
      .select(["sealed", "expires_at"])
      .where("automation_id", "=", automationId)
      .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)]))
      .execute();
    // The current one (no expiry) first: two made at the same instant cannot be told apart by created_at.
    rows.sort((a, b) => Number(a.expires_at !== null) - Number(b.expires_at !== null));
    return rows.map((r) => this.box.open(r.sealed, context(automationId)));
  }
}
