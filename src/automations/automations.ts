// Automations: their fields, steps and webhook trigger. Saving checks every step (see
// automation-input.ts) and keeps the trigger's listener in step with the trigger.
import type { ExpressionBuilder } from "kysely";
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { recordAudit } from "../audit/audit-record.js";
import { automationTarget, notificationSecretTarget, ROTATED, webhookSecretTarget } from "../audit/change.js";
import type { Origin } from "../core/origin.js";
import { invalidArgument, invalidField, notFound } from "../core/errors.js";
import { base62 } from "../core/ids.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { FundPolicies } from "../funds/fund-policy.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationsTable, Database } from "../storage/schema.js";
import { writeTransaction, type BeforeCommit, type Db } from "../storage/transactions.js";
import { checkGivenSecret, checkTrigger, holdsSecret, listenerUrl, type Listener, type Listeners } from "../webhooks/for-automations.js";
import { checkSteps, type AutomationStep, type StepRules } from "./automation-input.js";
import { checkFundTrigger, fundTriggerView, type FundTriggers, type StoredFundTrigger } from "./fund-triggers.js";
import type { NotificationSecrets } from "./notification-secrets.js";
import type { NotificationPublicKey, NotificationSigningKeys } from "./notification-signing-keys.js";
import { checkStepsReport, type StepCheckReport, type StepSample } from "./step-check.js";
import { stepView, webhookTriggerView } from "./automation-views.js";

export type Automation = components["schemas"]["Automation"];
type AutomationInput = components["schemas"]["AutomationServiceCreateAutomationRequest"]["automation"];

export interface Saved {
  automation: Automation;
  /** The HMAC secret this save created, to be shown once; null when it created none. */
  webhookSecret: string | null;
  /** The notification signing secret this save created (its first with a `notify` step), to be shown once; null when it created none. */
  notificationSecret: string | null;
}

/** Whether any of the steps is a `notify` step signed with HMAC (its automation then needs a signing secret). */
const notifies = (steps: readonly AutomationStep[]) => steps.some((s) => "notify" in s && s.notify && !signsWithEd25519(s));

/** Whether any of the steps is a `notify` step signed with Ed25519 (its automation then needs a key pair). */
const notifiesEd25519 = (steps: readonly AutomationStep[]) => steps.some(signsWithEd25519);

/** Whether a step is a `notify` step signed `v1a,` (Ed25519); absent, a step signs with HMAC. */
export const signsWithEd25519 = (step: AutomationStep): boolean => "notify" in step && step.notify?.signatureScheme === "NOTIFY_SIGNATURE_SCHEME_ED25519";

export const notificationPublicKeyNotFound = (id: string) =>
  notFound("NOTIFICATION_PUBLIC_KEY_NOT_FOUND", "the automation has no notification key pair: none of its saves had a notify step signed with Ed25519", { metadata: { automationId: id } });

export interface Rotated {
  automation: Automation;
  notificationSecret: string;
}

const MASK_FIELDS = ["displayName", "description", "isDraft", "enabled", "triggers", "automationSteps"] as const;
type MaskField = (typeof MASK_FIELDS)[number];

/** The lock of an automation's row: taken exclusive by its changes, shared by what reads it to act on it (reruns.ts). */
export const lockKey = (id: string) => `automations:${id}`;

type AutomationRow = AutomationsTable & { last_executed_at: string | null };

/**
 * When the automation's newest execution was started: read from the executions (one seek in their
 * index by automation) rather than kept on the automation, whose row every accepted event would
 * otherwise write, which serialized the intake of one automation on PostgreSQL's row lock.
 */
const lastExecutedAt = (eb: ExpressionBuilder<Database, "automations">) =>
  eb.selectFrom("automation_executions").select((e) => e.fn.max("automation_executions.created_at").as("at")).whereRef("automation_executions.automation_id", "=", "automations.id").as("last_executed_at");

export const automationNotFound = (id: string) => notFound("AUTOMATION_NOT_FOUND", "no automation with this id", { metadata: { automationId: id } });

export class Automations {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly listeners: Listeners,
    private readonly policy: FundPolicies,
    private readonly pageTokens: PageTokens,
    private readonly notificationSecrets: NotificationSecrets,
    private readonly notificationKeys: NotificationSigningKeys,
    private readonly options: { baseUrl: string; allowInsecureJwks: boolean; allowInsecureNotifications: boolean },
    private readonly fundTriggers?: FundTriggers,
  ) {}

  private async rules(): Promise<StepRules> {
    return { currencyCode: await this.policy.currency(), notifications: { allowInsecure: this.options.allowInsecureNotifications } };
  }

  private view(row: AutomationRow, listener: Listener | undefined): Automation {
    const triggers: Automation["triggers"] = listener
      ? [{ webhook: webhookTriggerView({ listenerId: listener.id, url: listenerUrl(this.options.baseUrl, listener.id, listener.method), method: listener.method, jwksUrl: listener.jwks_url, publicKey: listener.public_key ?? null, allowedSourceCidrs: JSON.parse(listener.allowed_cidrs) as string[] }), fundEvents: null }]
      : row.fund_trigger
        ? [{ webhook: null, fundEvents: fundTriggerView(JSON.parse(row.fund_trigger) as StoredFundTrigger) }]
        : [];
    return {
      id: row.id,
      displayName: row.display_name,
      description: row.description,
      isDraft: row.is_draft === 1,
      enabled: row.enabled === 1,
      triggers,
      automationSteps: (JSON.parse(row.steps) as AutomationStep[]).map(stepView),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      lastExecutedAt: row.last_executed_at,
    };
  }

  private async load(db: Db, id: string): Promise<Automation> {
    const row = await db.selectFrom("automations").selectAll().select(lastExecutedAt).where("id", "=", id).executeTakeFirst();
    if (!row) throw automationNotFound(id);
    return this.view(row, await this.listeners.forAutomation(db, id));
  }

  async get(id: string): Promise<Automation> {
    return this.load(this.storage.db, id);
  }

  async create(input: AutomationInput, beforeCommit?: BeforeCommit<Saved>, origin?: Origin): Promise<Saved> {
    const steps = checkSteps(input.automationSteps ?? [], await this.rules());
    const trigger = checkTrigger(input.triggers ?? [], this.options.allowInsecureJwks);
    const fundTrigger = checkFundTrigger(input.triggers ?? []);
    const now = new Date(this.clock.now()).toISOString();
    const id = `aut_${base62(16)}`;
    const saved = await writeTransaction(this.storage, { exclusive: [lockKey(id)] }, async (db) => {
      await this.fundTriggers?.recordChange(db);
      await db
        .insertInto("automations")
        .values({
          id,
          display_name: input.displayName,
          description: input.description ?? "",
          is_draft: input.isDraft === false ? 0 : 1,
          enabled: input.enabled === false ? 0 : 1,
          steps: JSON.stringify(steps),
          created_at: now,
          updated_at: now,
          fund_trigger: fundTrigger && JSON.stringify(fundTrigger),
        })
        .execute();
      const webhookSecret = await this.listeners.save(db, id, trigger);
      const notificationSecret = notifies(steps) ? await this.notificationSecrets.ensure(db, id) : null;
      if (notifiesEd25519(steps)) await this.notificationKeys.ensure(db, id);
      const saved = { automation: await this.load(db, id), webhookSecret: webhookSecret ?? null, notificationSecret };
      await recordAudit(db, origin, Date.parse(now), { operationId: "svc.api.automations.v1.AutomationService.CreateAutomation", target: automationTarget(id), before: null, after: saved.automation });
      await beforeCommit?.(db, saved);
      return saved;
    }, { origin });
    this.fundTriggers?.changedHere();
    return saved;
  }

  /** Checks steps as `create` and `update` would, and evaluates them against a sample payload; saves nothing. */
  async checkSteps(steps: readonly AutomationStep[], sample: StepSample | undefined): Promise<StepCheckReport> {
    return checkStepsReport(steps, await this.rules(), sample);
  }

  async update(id: string, input: AutomationInput, updateMask: string, origin?: Origin): Promise<Saved> {
    const mask = parseMask(updateMask);
    const steps = mask.has("automationSteps") ? checkSteps(input.automationSteps ?? [], await this.rules()) : undefined;
    const trigger = mask.has("triggers") ? checkTrigger(input.triggers ?? [], this.options.allowInsecureJwks) : undefined;
    const fundTrigger = mask.has("triggers") ? checkFundTrigger(input.triggers ?? []) : undefined;
    for (const flag of ["isDraft", "enabled"] as const) {
      if (mask.has(flag) && typeof input[flag] !== "boolean") throw invalidField(`body.automation.${flag}`, "must be set when named in updateMask");
    }
    const saved = await writeTransaction(this.storage, { exclusive: [lockKey(id)] }, async (db) => {
      const before = await this.load(db, id);
      const at = this.clock.now();
      await this.listeners.recordChange(db);
      await this.fundTriggers?.recordChange(db);
      await db
        .updateTable("automations")
        .set({
          ...(mask.has("displayName") ? { display_name: input.displayName } : {}),
          ...(mask.has("description") ? { description: input.description ?? "" } : {}),
          ...(mask.has("isDraft") ? { is_draft: input.isDraft ? 1 : 0 } : {}),
          ...(mask.has("enabled") ? { enabled: input.enabled ? 1 : 0 } : {}),
          ...(steps ? { steps: JSON.stringify(steps) } : {}),
          ...(fundTrigger !== undefined ? { fund_trigger: fundTrigger && JSON.stringify(fundTrigger) } : {}),
          updated_at: new Date(at).toISOString(),
        })
        .where("id", "=", id)
        .execute();
      const webhookSecret = trigger !== undefined ? await this.listeners.save(db, id, trigger) : undefined;
      const notificationSecret = steps && notifies(steps) ? await this.notificationSecrets.ensure(db, id) : null;
      if (steps && notifiesEd25519(steps)) await this.notificationKeys.ensure(db, id);
      const automation = await this.load(db, id);
      await recordAudit(db, origin, at, { operationId: "svc.api.automations.v1.AutomationService.UpdateAutomation", target: automationTarget(id), before, after: automation });
      return { automation, webhookSecret: webhookSecret ?? null, notificationSecret };
    }, { origin });
    this.listeners.changedHere();
    this.fundTriggers?.changedHere();
    return saved;
  }

  async delete(id: string, origin?: Origin): Promise<void> {
    await writeTransaction(this.storage, { exclusive: [lockKey(id)] }, async (db) => {
      const before = await this.load(db, id);
      await recordAudit(db, origin, this.clock.now(), { operationId: "svc.api.automations.v1.AutomationService.DeleteAutomation", target: automationTarget(id), before, after: null });
      await this.listeners.recordChange(db);
      await this.fundTriggers?.recordChange(db);
      await this.listeners.save(db, id, null);
      await this.notificationSecrets.remove(db, id);
      await this.notificationKeys.remove(db, id);
      await db.deleteFrom("webhook_events").where("automation_id", "=", id).execute();
      await db.deleteFrom("fund_threshold_firings").where("automation_id", "=", id).execute();
      await db.deleteFrom("automations").where("id", "=", id).execute();
    }, { origin });
    this.listeners.changedHere();
    this.fundTriggers?.changedHere();
  }

  /** The public key that verifies the automation's Ed25519-signed notifications: 404 when the automation, or its key pair, does not exist. */
  async notificationPublicKey(id: string): Promise<NotificationPublicKey> {
    const db = this.storage.db;
    const key = await this.notificationKeys.publicKey(db, id);
    if (key) return key;
    const exists = await db.selectFrom("automations").select("id").where("id", "=", id).executeTakeFirst();
    throw exists ? notificationPublicKeyNotFound(id) : automationNotFound(id);
  }

  /** A new notification signing secret (the automation's first, if it had none); the replaced one keeps signing for the grace period. */
  async rotateNotificationSecret(id: string, beforeCommit?: BeforeCommit<Rotated>, origin?: Origin): Promise<Rotated> {
    return writeTransaction(this.storage, { exclusive: [lockKey(id)] }, async (db) => {
      const automation = await this.load(db, id);
      const result = { automation, notificationSecret: await this.notificationSecrets.rotate(db, id) };
      await recordAudit(db, origin, this.clock.now(), { operationId: "svc.api.automations.v1.AutomationService.RotateNotificationSecret", target: notificationSecretTarget(id), before: null, after: ROTATED });
      await beforeCommit?.(db, result);
      return result;
    }, { origin });
  }

  /** `given`: the sender's own secret (RotateWebhookSecret's `webhookSecret`); absent, one is generated. */
  async rotateSecret(id: string, given: string | undefined, beforeCommit?: BeforeCommit<{ automation: Automation; webhookSecret: string }>, origin?: Origin): Promise<{ automation: Automation; webhookSecret: string }> {
    const rotated = await writeTransaction(this.storage, { exclusive: [lockKey(id)] }, async (db) => {
      const automation = await this.load(db, id);
      const listener = await this.listeners.forAutomation(db, id);
      if (!listener || !holdsSecret(listener.method, listener.public_key ?? null)) {
        throw invalidArgument("NOT_HMAC_TRIGGER", "the automation has no webhook trigger signed with a shared secret");
      }
      const secret = given === undefined ? undefined : checkGivenSecret(listener.method, given, "body.webhookSecret");
      await this.listeners.recordChange(db);
      const webhookSecret = await this.listeners.rotate(db, listener, secret);
      await recordAudit(db, origin, this.clock.now(), { operationId: "svc.api.automations.v1.AutomationService.RotateWebhookSecret", target: webhookSecretTarget(id), before: null, after: ROTATED });
      const result = { automation, webhookSecret };
      await beforeCommit?.(db, result);
      return result;
    }, { origin });
    this.listeners.changedHere();
    return rotated;
  }

  /** Ordered by id. */
  async list(size: number | undefined, token: string | undefined): Promise<Page<Automation>> {
    const scope = "automations";
    const after = this.pageTokens.decode(scope, token, "query.page_token", 1);
    const limit = pageSize(size);
    let query = this.storage.db
      .selectFrom("automations")
      .leftJoin("webhook_listeners", "webhook_listeners.automation_id", "automations.id")
      .selectAll("automations")
      .select(lastExecutedAt)
      .select(["webhook_listeners.id as l_id", "webhook_listeners.method as l_method", "webhook_listeners.jwks_url as l_jwks", "webhook_listeners.public_key as l_public_key", "webhook_listeners.allowed_cidrs as l_cidrs", "webhook_listeners.created_at as l_created"])
      .orderBy("automations.id")
      .limit(limit + 1);
    if (after) query = query.where("automations.id", ">", String(after[0]));
    const rows = await query.execute();
    return this.pageTokens.page(scope, rows, limit, (r) => [r.id], (r) =>
      this.view(r, r.l_id ? { id: r.l_id, automation_id: r.id, method: r.l_method!, jwks_url: r.l_jwks, public_key: r.l_public_key, allowed_cidrs: r.l_cidrs!, created_at: r.l_created! } : undefined),
    );
  }
}

function parseMask(mask: string): Set<MaskField> {
  const fields = mask.split(",").map((f) => f.trim()).filter(Boolean);
  if (fields.length === 0) throw invalidField("body.updateMask", "must name at least one field");
  for (const f of fields) {
    if (!(MASK_FIELDS as readonly string[]).includes(f)) throw invalidField("body.updateMask", `unknown field "${f}"; allowed: ${MASK_FIELDS.join(", ")}`, "INVALID_UPDATE_MASK");
  }
  return new Set(fields as MaskField[]);
}
