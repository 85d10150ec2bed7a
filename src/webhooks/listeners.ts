// Webhook listeners (one per automation with a webhook trigger) and their HMAC secrets. A secret is
// generated here, returned once to the caller, and stored only sealed. Rotation keeps the replaced
// secret valid for a grace period so senders can switch without losing events.
import type { Clock } from "../core/clock.js";
import { base62, newId, secret256 } from "../core/ids.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import type { AutomationsTable, WebhookListenersTable } from "../storage/schema.js";
import type { Db } from "../storage/transactions.js";
import type { SecretBox } from "./secret-box.js";
import type { WebhookTriggerConfig } from "./trigger.js";

export type Listener = WebhookListenersTable;

/** Where senders post to the listener: the JWT audience it accepts, and the URL its trigger shows. */
export const listenerUrl = (baseUrl: string, listenerId: string): string => `${baseUrl}/api/v1/webhooks/incoming/${listenerId}`;

export type IntakeListener = Listener & {
  sealedSecrets: string[];
  /** What the intake needs of the listener's automation: whether it runs, and its steps (JSON). */
  automation: Pick<AutomationsTable, "is_draft" | "enabled" | "steps">;
};

/**
 * The listener and its automation's state, with each secret valid at `now`, newest first (a
 * listener without one: one row, sealed null).
 */
const intakeLookup = prepared((db, v: { listenerId: string; now: string }) =>
  db
    .selectFrom("webhook_listeners")
    .innerJoin("automations", "automations.id", "webhook_listeners.automation_id")
    .leftJoin("webhook_secrets", (join) =>
      join.onRef("webhook_secrets.listener_id", "=", "webhook_listeners.id").on((eb) => eb.or([eb("webhook_secrets.expires_at", "is", null), eb("webhook_secrets.expires_at", ">", v.now)])),
    )
    .selectAll("webhook_listeners")
    .select(["webhook_secrets.sealed", "automations.is_draft", "automations.enabled", "automations.steps"])
    .where("webhook_listeners.id", "=", v.listenerId)
    .orderBy("webhook_secrets.created_at", "desc"),
);

export class Listeners {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly graceSeconds: number,
  ) {}

  private iso(offsetMs = 0): string {
    return new Date(this.clock.now() + offsetMs).toISOString();
  }

  private async addSecret(db: Db, listenerId: string): Promise<string> {
    const secret = secret256();
    await db.insertInto("webhook_secrets").values({ id: newId(), listener_id: listenerId, sealed: this.box.seal(secret, listenerId), created_at: this.iso(), expires_at: null }).execute();
    return secret;
  }

  /**
   * Makes the automation's listener match its trigger: created, updated in place (same id and URL),
   * or removed. Returns the new HMAC secret when this save created one.
   */
  async save(db: Db, automationId: string, config: WebhookTriggerConfig | null): Promise<string | undefined> {
    const existing = await db.selectFrom("webhook_listeners").selectAll().where("automation_id", "=", automationId).executeTakeFirst();
    if (!config) {
      if (existing) {
        await db.deleteFrom("webhook_secrets").where("listener_id", "=", existing.id).execute();
        await db.deleteFrom("webhook_listeners").where("id", "=", existing.id).execute();
      }
      return undefined;
    }
    const fields = { method: config.method, jwks_url: config.jwksUrl, allowed_cidrs: JSON.stringify(config.allowedSourceCidrs) };
    if (!existing) {
      const id = `wh_${base62(16)}`;
      await db.insertInto("webhook_listeners").values({ id, automation_id: automationId, created_at: this.iso(), ...fields }).execute();
      return config.method === "hmac" ? this.addSecret(db, id) : undefined;
    }
    await db.updateTable("webhook_listeners").set(fields).where("id", "=", existing.id).execute();
    if (config.method === "jwt") {
      await db.deleteFrom("webhook_secrets").where("listener_id", "=", existing.id).execute();
      return undefined;
    }
    return existing.method === "jwt" ? this.addSecret(db, existing.id) : undefined;
  }

  /** A new current secret; the replaced one stays valid for the grace period, older ones end now. */
  async rotate(db: Db, listenerId: string): Promise<string> {
    await db.deleteFrom("webhook_secrets").where("listener_id", "=", listenerId).where("expires_at", "is not", null).execute();
    await db.updateTable("webhook_secrets").set({ expires_at: this.iso(this.graceSeconds * 1000) }).where("listener_id", "=", listenerId).where("expires_at", "is", null).execute();
    return this.addSecret(db, listenerId);
  }

  async forAutomation(db: Db, automationId: string): Promise<Listener | undefined> {
    return db.selectFrom("webhook_listeners").selectAll().where("automation_id", "=", automationId).executeTakeFirst();
  }

  /**
   * The listener with its automation's state and the sealed secrets a signature may be made with
   * now, current one first, in one read: the intake's lookup. Secrets are opened only by
   * `openSecrets`, once the request has passed the checks that come before authentication.
   */
  async findForIntake(listenerId: string): Promise<IntakeListener | undefined> {
    const { rows } = await intakeLookup.execute(this.storage.db, { listenerId, now: this.iso() });
    const [first] = rows;
    if (!first) return undefined;
    const { sealed: _sealed, is_draft, enabled, steps, ...listener } = first;
    return { ...listener, automation: { is_draft, enabled, steps }, sealedSecrets: rows.flatMap((r) => (r.sealed === null ? [] : [r.sealed])) };
  }

  openSecrets(listener: IntakeListener): string[] {
    return listener.sealedSecrets.map((sealed) => this.box.open(sealed, listener.id));
  }
}
