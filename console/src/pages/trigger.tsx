// An automation's trigger: the form that chooses its kind, an incoming webhook (HMAC or JWT with
// its JWKS URL, the allowed source CIDRs) or fund events (./fund-trigger.tsx), and the listener
// panel shown after a save: the complete URL and, once, the HMAC secret, each with a copy button,
// and ready-to-paste example requests.
import { useState } from "preact/hooks";
import type { Schemas } from "../api.js";
import { Copyable, CopyButton, Field } from "../components.js";
import { curlCommand, exampleBody, senderCommand } from "../webhook-example.js";
import { FundEventInputs, FundEventsPanel, fundEventsDraftOf, fundEventsOf, fundEventsSummary, type FundEventsDraft } from "./fund-trigger.js";

type Trigger = Schemas["AutomationTrigger"];
type Webhook = Schemas["IncomingWebhookTrigger"];

export interface TriggerDraft {
  kind: "webhook" | "fundEvents";
  method: "hmac" | "jwt";
  jwksUrl: string;
  cidrs: string;
  fundEvents: FundEventsDraft;
}

export function draftOf(trigger: Trigger | undefined): TriggerDraft {
  const webhook = trigger?.webhook;
  const jwt = webhook && "jwt" in webhook && webhook.jwt ? webhook.jwt : null;
  return {
    kind: trigger?.fundEvents ? "fundEvents" : "webhook",
    method: jwt ? "jwt" : "hmac",
    jwksUrl: jwt?.jwksUrl ?? "",
    cidrs: (webhook?.allowedSourceCidrs ?? []).join("\n"),
    fundEvents: fundEventsDraftOf(trigger?.fundEvents),
  };
}

/** The contract's trigger of a draft (thresholds that are not whole numbers throw, shown next to Save). */
export function triggerOf(draft: TriggerDraft) {
  if (draft.kind === "fundEvents") return { fundEvents: fundEventsOf(draft.fundEvents) };
  const allowedSourceCidrs = draft.cidrs.split(/[\s,]+/).filter(Boolean);
  return { webhook: draft.method === "jwt" ? { jwt: { jwksUrl: draft.jwksUrl.trim() }, allowedSourceCidrs } : { hmac: {}, allowedSourceCidrs } };
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
      <div class="row" role="radiogroup" aria-label="Authentication">
        <label class="choice">
          <input type="radio" name="method" checked={draft.method === "hmac"} onChange={() => onChange({ ...draft, method: "hmac" })} /> HMAC (shared secret)
        </label>
        <label class="choice">
          <input type="radio" name="method" checked={draft.method === "jwt"} onChange={() => onChange({ ...draft, method: "jwt" })} /> JWT (your JWKS)
        </label>
      </div>
      {draft.method === "jwt" ? (
        <Field label="JWKS URL" hint="The HTTPS address of the sender's JSON Web Key Set.">
          <input type="url" value={draft.jwksUrl} placeholder="e.g. https://sender.example.com/.well-known/jwks.json" onInput={(e) => onChange({ ...draft, jwksUrl: e.currentTarget.value })} />
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
  if (trigger.webhook) return "jwt" in trigger.webhook && trigger.webhook.jwt ? "Webhook, JWT" : "Webhook, HMAC";
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

/** The listener's URL, the secret when it has just been issued, and example requests. */
function ListenerPanel({ webhook, secret, userId }: { webhook: Webhook; secret: string | undefined; userId: string }) {
  const [tab, setTab] = useState<"sender" | "curl">("sender");
  const method = "jwt" in webhook && webhook.jwt ? "jwt" : "hmac";
  const url = webhook.url ?? "";
  const target = { url, method, baseUrl: window.location.origin, body: exampleBody(userId), ...(secret ? { secret } : {}) } as const;
  const example = tab === "curl" && method === "hmac" ? curlCommand(target) : senderCommand(target);
  return (
    <section class="panel" aria-label="Listener">
      <Copyable label="Webhook URL" value={url} testId="webhook-url" />
      {secret ? (
        <div class="secret">
          <Copyable label="Signing secret" value={secret} testId="webhook-secret" />
          <p class="warning">Shown once: copy it now. It cannot be read again; rotate it to get a new one.</p>
        </div>
      ) : method === "hmac" ? (
        <p class="hint">The signing secret was shown when it was issued. Rotate it to get a new one.</p>
      ) : (
        <p class="hint">
          JWT: signed by a key of <code>{"jwt" in webhook && webhook.jwt ? webhook.jwt.jwksUrl : ""}</code>, with <code>sub</code> {window.location.origin} and <code>aud</code> the URL above.
        </p>
      )}
      <div class="example">
        <div class="tabs" role="tablist">
          <button type="button" role="tab" aria-selected={tab === "sender"} onClick={() => setTab("sender")}>
            Sender script
          </button>
          {method === "hmac" ? (
            <button type="button" role="tab" aria-selected={tab === "curl"} onClick={() => setTab("curl")}>
              curl
            </button>
          ) : null}
        </div>
        <pre data-testid="example-request">{example}</pre>
        <CopyButton text={example} label="Copy example request" />
      </div>
    </section>
  );
}
