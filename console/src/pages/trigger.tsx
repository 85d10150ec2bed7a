// An automation's trigger: the form that chooses its kind, an incoming webhook (its listener's
// kind: HMAC, JWT with its JWKS URL, Standard Webhooks with an optional public key, GitHub, Stripe;
// the allowed source CIDRs) or fund events (./fund-trigger.tsx), and the panel that shows it.
import type { Schemas } from "../api.js";
import { Field } from "../components.js";
import { KIND_LABELS, KIND_NAMES, kindOf, LISTENER_KINDS, publicKeyOf, type ListenerKind } from "../listener-kinds.js";
import { FundEventInputs, FundEventsPanel, fundEventsDraftOf, fundEventsOf, fundEventsSummary, type FundEventsDraft } from "./fund-trigger.js";
import { ListenerPanel } from "./listener.js";

type Trigger = Schemas["AutomationTrigger"];
type Webhook = Schemas["IncomingWebhookTrigger"];

export interface TriggerDraft {
  kind: "webhook" | "fundEvents";
  method: ListenerKind;
  jwksUrl: string;
  /** A Standard Webhooks sender's Ed25519 key (`whpk_…`); empty: it signs with a secret. */
  publicKey: string;
  cidrs: string;
  fundEvents: FundEventsDraft;
}

export function draftOf(trigger: Trigger | undefined): TriggerDraft {
  const webhook = trigger?.webhook;
  const jwt = webhook && "jwt" in webhook && webhook.jwt ? webhook.jwt : null;
  return {
    kind: trigger?.fundEvents ? "fundEvents" : "webhook",
    method: (webhook && kindOf(webhook)) ?? "hmac",
    jwksUrl: jwt?.jwksUrl ?? "",
    publicKey: (webhook && publicKeyOf(webhook)) ?? "",
    cidrs: (webhook?.allowedSourceCidrs ?? []).join("\n"),
    fundEvents: fundEventsDraftOf(trigger?.fundEvents),
  };
}

/** The contract's trigger of a draft (thresholds that are not whole numbers throw, shown next to Save). */
export function triggerOf(draft: TriggerDraft) {
  if (draft.kind === "fundEvents") return { fundEvents: fundEventsOf(draft.fundEvents) };
  const allowedSourceCidrs = draft.cidrs.split(/[\s,]+/).filter(Boolean);
  return { webhook: { ...listenerArm(draft), allowedSourceCidrs } };
}

/** The arm of the contract's oneof that the draft's kind sets. */
function listenerArm(draft: TriggerDraft) {
  switch (draft.method) {
    case "jwt":
      return { jwt: { jwksUrl: draft.jwksUrl.trim() } };
    case "standardWebhooks":
      return { standardWebhooks: draft.publicKey.trim() ? { publicKey: draft.publicKey.trim() } : {} };
    case "github":
      return { github: {} };
    case "stripe":
      return { stripe: {} };
    case "hmac":
      return { hmac: {} };
  }
}

/** `hasListener`: the automation has a webhook listener now, which choosing fund events removes. */
export function TriggerInputs({ draft, onChange, hasListener = false }: { draft: TriggerDraft; onChange: (d: TriggerDraft) => void; hasListener?: boolean }) {
  return (
    <>
      <div class="row" role="radiogroup" aria-label="Trigger kind">
        <label class="choice">
          <input type="radio" name="trigger-kind" checked={draft.kind === "webhook"} onChange={() => onChange({ ...draft, kind: "webhook" })} /> Incoming webhook
        </label>
        <label class="choice">
          <input type="radio" name="trigger-kind" checked={draft.kind === "fundEvents"} onChange={() => onChange({ ...draft, kind: "fundEvents" })} /> Fund events
        </label>
      </div>
      {draft.kind === "fundEvents" ? (
        <>
          {hasListener ? <p class="warning">Saving removes the webhook listener: its URL stops answering.</p> : null}
          <FundEventInputs draft={draft.fundEvents} onChange={(fundEvents) => onChange({ ...draft, fundEvents })} />
        </>
      ) : (
        <WebhookInputs draft={draft} onChange={onChange} />
      )}
    </>
  );
}

function WebhookInputs({ draft, onChange }: { draft: TriggerDraft; onChange: (d: TriggerDraft) => void }) {
  return (
    <fieldset>
      <legend>Incoming-webhook trigger</legend>
      <div class="row" role="radiogroup" aria-label="Sender">
        {LISTENER_KINDS.map((kind) => (
          <label class="choice" key={kind}>
            <input type="radio" name="method" checked={draft.method === kind} onChange={() => onChange({ ...draft, method: kind })} /> {KIND_LABELS[kind]}
          </label>
        ))}
      </div>
      {draft.method === "jwt" ? (
        <Field label="JWKS URL" hint="The HTTPS address of the sender's JSON Web Key Set.">
          <input type="url" value={draft.jwksUrl} placeholder="e.g. https://sender.example.com/.well-known/jwks.json" onInput={(e) => onChange({ ...draft, jwksUrl: e.currentTarget.value })} />
        </Field>
      ) : null}
      {draft.method === "standardWebhooks" ? (
        <Field label="Public key (optional)" hint="The sender's Ed25519 key, whpk_…, for v1a signatures. Empty: it signs with a whsec_… secret (v1).">
          <input value={draft.publicKey} placeholder="e.g. whpk_gtVFaCliCkpHmooMSttu09tUx/KbUb/b73b/cHXymwg=" onInput={(e) => onChange({ ...draft, publicKey: e.currentTarget.value })} />
        </Field>
      ) : null}
      <Field label="Allowed source CIDRs" hint="One range per line, e.g. 203.0.113.0/24. Empty: any source.">
        <textarea rows={2} value={draft.cidrs} onInput={(e) => onChange({ ...draft, cidrs: e.currentTarget.value })} />
      </Field>
    </fieldset>
  );
}

export function webhookOf(automation: Schemas["Automation"]): Webhook | undefined {
  return automation.triggers?.[0]?.webhook ?? undefined;
}

/** The trigger in one line, for the automation list. */
export function triggerSummary(automation: Schemas["Automation"]): string {
  const trigger = automation.triggers?.[0];
  if (!trigger) return "None";
  if (trigger.webhook) {
    const kind = kindOf(trigger.webhook);
    return kind ? `Webhook, ${KIND_NAMES[kind]}` : "Webhook of a kind this console does not know";
  }
  if (trigger.fundEvents) return fundEventsSummary(trigger.fundEvents);
  return "Of a kind this console does not know";
}

/**
 * An automation's trigger, whatever its kind: the listener of a webhook (its examples about
 * `exampleUserId`), the events and condition of fund events.
 */
export function TriggerPanel({ trigger, secret, exampleUserId }: { trigger: Trigger | undefined; secret: string | undefined; exampleUserId: string }) {
  if (!trigger) return <p>No trigger: the automation never runs.</p>;
  if (trigger.webhook) return <ListenerPanel webhook={trigger.webhook} secret={secret} userId={exampleUserId} />;
  if (trigger.fundEvents) return <FundEventsPanel trigger={trigger.fundEvents} />;
  return <p>A trigger of a kind this console does not know; the API shows it.</p>;
}
