// A webhook listener: what its sender must be configured with (the URL and, once, the secret, in
// the words of that sender's settings), example requests for this API's own schemes, and rotating
// its secret, with the sender's own for the kinds whose senders make one.
import { useState } from "preact/hooks";
import { call, type Schemas, type Session } from "../api.js";
import { Copyable, CopyButton, Field, OnceSecret, Outcome, useAction } from "../components.js";
import { hasSecret, kindOf, senderSetup, takesSendersSecret } from "../listener-kinds.js";
import { curlCommand, exampleBody, senderCommand } from "../webhook-example.js";

type Webhook = Schemas["IncomingWebhookTrigger"];

/** The listener's URL, the secret when it has just been issued, and how its sender is set up. */
export function ListenerPanel({ webhook, secret, userId }: { webhook: Webhook; secret: string | undefined; userId: string }) {
  const setup = senderSetup(webhook);
  const kind = kindOf(webhook);
  const url = webhook.url ?? "";
  return (
    <section class="panel" aria-label="Listener">
      <Copyable label={setup.urlLabel} value={url} testId="webhook-url" />
      {setup.settings.map((s) => (
        <p key={s.label} data-testid="sender-setting">
          {s.label}: <code>{s.value}</code>
        </p>
      ))}
      {!hasSecret(webhook) ? null : secret ? (
        <OnceSecret label={setup.secretLabel} value={secret} testId="webhook-secret" then="It cannot be read again; rotate it to get a new one." />
      ) : (
        <p class="hint">The {setup.secretLabel.toLowerCase()} was shown when it was issued. Rotate it to get a new one.</p>
      )}
      {setup.note ? (
        <p class="hint" data-testid="sender-note">
          {setup.note}
        </p>
      ) : null}
      {kind === "jwt" ? (
        <p class="hint">
          JWT: signed by a key of <code>{"jwt" in webhook && webhook.jwt ? webhook.jwt.jwksUrl : ""}</code>, with <code>sub</code> {window.location.origin} and <code>aud</code> the URL above.
        </p>
      ) : null}
      {kind === "hmac" || kind === "jwt" ? <ExampleRequests method={kind} url={url} secret={secret} userId={userId} /> : null}
    </section>
  );
}

/** Ready-to-paste requests in this API's own schemes: the sender script, and for HMAC a curl that signs. */
function ExampleRequests({ method, url, secret, userId }: { method: "hmac" | "jwt"; url: string; secret: string | undefined; userId: string }) {
  const [tab, setTab] = useState<"sender" | "curl">("sender");
  const target = { url, method, baseUrl: window.location.origin, body: exampleBody(userId), ...(secret ? { secret } : {}) };
  const example = tab === "curl" && method === "hmac" ? curlCommand(target) : senderCommand(target);
  return (
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
  );
}

/**
 * Rotates the listener's secret: a new one generated, or the sender's own (a Stripe or Svix
 * endpoint's signing secret, a secret typed into GitHub's form). Nothing for a listener without a secret.
 */
export function RotateSecret({ session, automationId, webhook, onRotated }: { session: Session; automationId: string; webhook: Webhook; onRotated: (automation: Schemas["Automation"], secret: string) => void }) {
  const [sendersSecret, setSendersSecret] = useState("");
  const own = takesSendersSecret(webhook);
  const rotate = useAction(async () => {
    const given = own ? sendersSecret.trim() : "";
    const body = given ? { webhookSecret: given } : {};
    const rotated = await call(session.client.POST("/api/v1/automations/{id}/webhook-secret", { params: { path: { id: automationId } }, body }));
    onRotated(rotated.automation, rotated.webhookSecret);
    setSendersSecret("");
    return given ? "Webhook secret replaced by the sender's: shown once, above." : "Webhook secret rotated: the new one is shown once, above.";
  });
  if (!hasSecret(webhook)) return null;
  return (
    <form
      class="rotate"
      onSubmit={(e) => {
        e.preventDefault();
        void rotate.run();
      }}
    >
      {own ? (
        <Field label="Sender's secret" hint="Optional: the signing secret the sender made (Stripe's whsec_…, say). Empty: a new one is generated.">
          <input value={sendersSecret} autoComplete="off" placeholder="empty to generate one" onInput={(e) => setSendersSecret(e.currentTarget.value)} />
        </Field>
      ) : null}
      <button type="submit" disabled={rotate.busy}>
        Rotate secret
      </button>
      <Outcome action={rotate} />
    </form>
  );
}
