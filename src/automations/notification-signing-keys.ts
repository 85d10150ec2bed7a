// The Ed25519 key pairs of automations' `notify` steps signed `v1a,` (Standard Webhooks' asymmetric
// signature), one per automation: made by the automation's first save with such a step, the
// private key stored only sealed with SECRETS_KEY and bound to the automation (a sealed key copied
// onto another automation does not open), never returned; the public key published as `whpk_` and
// as a JWK. A key pair is not rotated: it lives as long as its automation.
// docs/automations.md, "Outbound notifications: the `notify` step".
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import type { Clock } from "../core/clock.js";
import type { Storage } from "../storage/connect.js";
import type { Sealed } from "../storage/secrets-key.js";
import type { Db } from "../storage/transactions.js";
import type { SecretBox } from "../webhooks/for-automations.js";

const PUBLIC_PREFIX = "whpk_";

/** What a sealed private key is bound to. */
const context = (automationId: string) => `notification-key:${automationId}`;

/** One notification private key as sealed, for the secrets key's check at start. */
export async function sealedNotificationKeySample(storage: Storage): Promise<Sealed | undefined> {
  const row = await storage.db.selectFrom("notification_signing_keys").select(["automation_id", "sealed"]).limit(1).executeTakeFirst();
  return row && { sealed: row.sealed, context: context(row.automation_id) };
}

export interface NotificationPublicKey {
  /** `whpk_` and the standard base64 of the raw 32-byte key (Standard Webhooks). */
  publicKey: string;
  jwk: { kty: "OKP"; crv: "Ed25519"; x: string };
  createdAt: string;
}

export class NotificationSigningKeys {
  constructor(
    private readonly clock: Clock,
    private readonly box: SecretBox,
  ) {}

  /** A key pair for the automation when it has none; an existing one is kept. */
  async ensure(db: Db, automationId: string): Promise<void> {
    const current = await db.selectFrom("notification_signing_keys").select("automation_id").where("automation_id", "=", automationId).executeTakeFirst();
    if (current) return;
    const { publicKey, privateKey } = generateKeyPairSync("ed25519");
    const raw = Buffer.from(publicKey.export({ format: "jwk" }).x ?? "", "base64url");
    const pkcs8 = privateKey.export({ format: "der", type: "pkcs8" }).toString("base64");
    await db
      .insertInto("notification_signing_keys")
      .values({ automation_id: automationId, sealed: this.box.seal(pkcs8, context(automationId)), public_key: raw.toString("base64"), created_at: new Date(this.clock.now()).toISOString() })
      .execute();
  }

  async remove(db: Db, automationId: string): Promise<void> {
    await db.deleteFrom("notification_signing_keys").where("automation_id", "=", automationId).execute();
  }

  /** The published key; undefined when the automation has no key pair. */
  async publicKey(db: Db, automationId: string): Promise<NotificationPublicKey | undefined> {
    const row = await db.selectFrom("notification_signing_keys").select(["public_key", "created_at"]).where("automation_id", "=", automationId).executeTakeFirst();
    if (!row) return undefined;
    const x = Buffer.from(row.public_key, "base64").toString("base64url");
    return { publicKey: PUBLIC_PREFIX + row.public_key, jwk: { kty: "OKP", crv: "Ed25519", x }, createdAt: row.created_at };
  }

  /** The private key a notification is signed with, opened; undefined when the automation has none. */
  async signing(db: Db, automationId: string): Promise<KeyObject | undefined> {
    const row = await db.selectFrom("notification_signing_keys").select("sealed").where("automation_id", "=", automationId).executeTakeFirst();
    if (!row) return undefined;
    return createPrivateKey({ key: Buffer.from(this.box.open(row.sealed, context(automationId)), "base64"), format: "der", type: "pkcs8" });
  }
}
