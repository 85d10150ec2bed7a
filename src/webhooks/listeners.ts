// Webhook listeners (one per automation with a webhook trigger) and their HMAC secrets: generated
// here, returned once, stored only sealed; a rotation keeps the replaced secret valid for a grace
// period so senders can switch without losing events. The intake's read of a listener is kept per
// process while the listeners' change watch trusts it (every write that changes it records a change
// in its transaction), and a kept secret carries its expiry. docs/operating.md, "PostgreSQL, and
// several instances".
import type { Clock } from "../core/clock.js";
import { BoundedMap } from "../core/bounded-map.js";
import { base62, newId, secret256 } from "../core/ids.js";
import { recordChange, type ChangeWatch } from "../storage/change-versions.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import type { Sealed } from "../storage/secrets-key.js";
import type { AutomationsTable, WebhookListenersTable } from "../storage/schema.js";
import type { Db } from "../storage/transactions.js";
import { generateSecret, holdsSecret } from "./listener-kinds.js";
import type { SecretBox } from "./secret-box.js";
import type { WebhookTriggerConfig } from "./webhook-trigger.js";

export type Listener = WebhookListenersTable;

export type IntakeListener = Listener & {
  /** Sealed, current one first; `expiresAt` set on a replaced one in its grace period. */
  secrets: Array<{ sealed: string; expiresAt: string | null }>;
  /** What the intake needs of the listener's automation: whether it runs, and its steps (JSON). */
  automation: Pick<AutomationsTable, "is_draft" | "enabled" | "steps">;
};

/**
 * What the kept listeners may hold: 4,096 of them, and 8 Mi characters of their steps, CIDRs, JWKS
 * URL, public key and sealed secrets together (one automation's steps may take 256 KiB). The oldest goes first.
 */
const KEPT = { entries: 4096, size: 8 * 1024 * 1024 };

/** What a kept listener is counted as: the characters of its fields that vary in size. */
const keptSize = (l: IntakeListener): number =>
  l.automation.steps.length + l.allowed_cidrs.length + (l.jwks_url?.length ?? 0) + (l.public_key?.length ?? 0) + l.secrets.reduce((n, s) => n + s.sealed.length, 0);

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
    .select(["webhook_secrets.sealed", "webhook_secrets.expires_at as secret_expires_at", "automations.is_draft", "automations.enabled", "automations.steps"])
    .where("webhook_listeners.id", "=", v.listenerId)
    .orderBy("webhook_secrets.created_at", "desc"),
);

/** One webhook secret as sealed (bound to its listener), for the secrets key's check at start. */
export async function sealedSecretSample(storage: Storage): Promise<Sealed | undefined> {
  const row = await storage.db.selectFrom("webhook_secrets").select(["listener_id", "sealed"]).limit(1).executeTakeFirst();
  return row && { sealed: row.sealed, context: row.listener_id };
}

export class Listeners {
  /** The intake's reads, each with the watch's generation taken before it. */
  private readonly kept = new BoundedMap<string, { listener: IntakeListener; generation: number }>(KEPT);

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly graceSeconds: number,
    private readonly changes: ChangeWatch,
  ) {}

  /** Call in the transaction of any write that changes what the intake reads of a listener. */
  async recordChange(db: Db): Promise<void> {
    await recordChange(db, "listeners");
  }

  /** Call once that transaction committed: this instance's next delivery reads the listener anew. */
  changedHere(): void {
    this.changes.changedHere();
  }

  private iso(offsetMs = 0): string {
    return new Date(this.clock.now() + offsetMs).toISOString();
  }

  private async addSecret(db: Db, listenerId: string, secret: string): Promise<string> {
    await db.insertInto("webhook_secrets").values({ id: newId(), listener_id: listenerId, sealed: this.box.seal(secret, listenerId), created_at: this.iso(), expires_at: null }).execute();
    return secret;
  }

  /**
   * Makes the automation's listener match its trigger: created, updated in place (same id), or
   * removed. A save that keeps the kind (and, for Standard Webhooks, keeps verifying with a secret)
   * keeps the secrets; any other change of kind ends them at once and, when the new kind holds one,
   * generates a secret in its form. Returns the new secret when this save generated one.
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
    const fields = { method: config.method, jwks_url: config.jwksUrl, public_key: config.publicKey, allowed_cidrs: JSON.stringify(config.allowedSourceCidrs) };
    const takesSecret = holdsSecret(config.method, config.publicKey);
    if (!existing) {
      const id = `wh_${base62(16)}`;
      await db.insertInto("webhook_listeners").values({ id, automation_id: automationId, created_at: this.iso(), ...fields }).execute();
      return takesSecret ? this.addSecret(db, id, generateSecret(config.method)) : undefined;
    }
    await db.updateTable("webhook_listeners").set(fields).where("id", "=", existing.id).execute();
    const keepsSecrets = takesSecret && existing.method === config.method && holdsSecret(existing.method, existing.public_key ?? null);
    if (keepsSecrets) return undefined;
    await db.deleteFrom("webhook_secrets").where("listener_id", "=", existing.id).execute();
    return takesSecret ? this.addSecret(db, existing.id, generateSecret(config.method)) : undefined;
  }

  /**
   * A new current secret, `given` (the sender's own, checked by the caller) or generated in the
   * kind's form; the replaced one stays valid for the grace period, older ones end now.
   */
  async rotate(db: Db, listener: Listener, given?: string): Promise<string> {
    await db.deleteFrom("webhook_secrets").where("listener_id", "=", listener.id).where("expires_at", "is not", null).execute();
    await db.updateTable("webhook_secrets").set({ expires_at: this.iso(this.graceSeconds * 1000) }).where("listener_id", "=", listener.id).where("expires_at", "is", null).execute();
    return this.addSecret(db, listener.id, given ?? generateSecret(listener.method));
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
    const kept = this.kept.get(listenerId);
    if (kept && this.changes.trusts(kept.generation)) return kept.listener;
    // Taken before the read: a change seen while it runs leaves what it read untrusted.
    const generation = this.changes.generation;
    const { rows } = await intakeLookup.execute(this.storage.db, { listenerId, now: this.iso() });
    const [first] = rows;
    if (!first) return undefined;
    const { sealed: _sealed, secret_expires_at: _expires, is_draft, enabled, steps, ...row } = first;
    const listener = { ...row, automation: { is_draft, enabled, steps }, secrets: rows.flatMap((r) => (r.sealed === null ? [] : [{ sealed: r.sealed, expiresAt: r.secret_expires_at }])) };
    this.kept.set(listenerId, { listener, generation }, keptSize(listener));
    return listener;
  }

  /** The listener's secrets a signature may be made with now, opened, current one first. */
  openSecrets(listener: IntakeListener): string[] {
    const now = this.iso();
    return listener.secrets.filter((s) => s.expiresAt === null || s.expiresAt > now).map((s) => this.box.open(s.sealed, listener.id));
  }
}
