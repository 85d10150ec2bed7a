// The kinds of incoming-webhook listener (the arms of the contract's `IncomingWebhookTrigger`):
// their names in words, which have a secret and whose senders make their own, and what a sender
// must be configured with, in the words of that sender's own settings.
import type { components } from "../../generated/api.js";

type Webhook = components["schemas"]["IncomingWebhookTrigger"];

export const LISTENER_KINDS = ["hmac", "jwt", "standardWebhooks", "github", "stripe"] as const;
export type ListenerKind = (typeof LISTENER_KINDS)[number];

/** The kind as the trigger form offers it. */
export const KIND_LABELS: Record<ListenerKind, string> = {
  hmac: "HMAC (this API's scheme)",
  jwt: "JWT (your JWKS)",
  standardWebhooks: "Standard Webhooks (Svix and others)",
  github: "GitHub",
  stripe: "Stripe",
};

/** The kind in a few words, for the automation list. */
export const KIND_NAMES: Record<ListenerKind, string> = { hmac: "HMAC", jwt: "JWT", standardWebhooks: "Standard Webhooks", github: "GitHub", stripe: "Stripe" };

/** The arm a listener sets (answers carry every arm, the unset ones null); undefined for a kind this console does not know. */
export function kindOf(webhook: Webhook): ListenerKind | undefined {
  const arms: Partial<Record<ListenerKind, unknown>> = webhook;
  return LISTENER_KINDS.find((kind) => arms[kind] !== undefined && arms[kind] !== null);
}

/** The Ed25519 key of a Standard Webhooks listener that verifies `v1a` signatures; null for any other. */
export function publicKeyOf(webhook: Webhook): string | null {
  return "standardWebhooks" in webhook ? (webhook.standardWebhooks?.publicKey ?? null) : null;
}

/** Whether the listener verifies with a secret (JWT and public-key listeners have none to rotate). */
export function hasSecret(webhook: Webhook): boolean {
  const kind = kindOf(webhook);
  if (kind === "standardWebhooks") return publicKeyOf(webhook) === null;
  return kind === "hmac" || kind === "github" || kind === "stripe";
}

/** Whether rotating may take the sender's own secret: every kind with a secret but this API's HMAC, which is always generated. */
export function takesSendersSecret(webhook: Webhook): boolean {
  return hasSecret(webhook) && kindOf(webhook) !== "hmac";
}

/** What the sender is configured with, labelled as its settings label it. */
export interface SenderSetup {
  urlLabel: string;
  secretLabel: string;
  /** Settings beyond the URL and the secret, as "label: value". */
  settings: { label: string; value: string }[];
  /** Where the settings go, and what the sender does differently; empty when the example requests say it. */
  note: string;
}

export function senderSetup(webhook: Webhook): SenderSetup {
  switch (kindOf(webhook)) {
    case "github":
      return {
        urlLabel: "Payload URL",
        secretLabel: "Secret",
        settings: [{ label: "Content type", value: "application/json" }],
        note: "In the repository's (or organization's) Settings → Webhooks → Add webhook: the Payload URL, Content type application/json and the Secret. GitHub's ping event arrives first.",
      };
    case "stripe":
      return {
        urlLabel: "Endpoint URL",
        secretLabel: "Signing secret",
        settings: [],
        note: "In Stripe's Dashboard (Developers → Webhooks → Add endpoint): the Endpoint URL. Stripe makes its own signing secret for the endpoint: reveal Stripe's whsec_… and paste it into Sender's secret under Rotate secret; until then Stripe's deliveries are refused.",
      };
    case "standardWebhooks":
      return {
        urlLabel: "Endpoint URL",
        secretLabel: "Signing secret",
        settings: [],
        note:
          publicKeyOf(webhook) === null
            ? "In the sender's webhook settings (a Svix endpoint, say): the Endpoint URL and the whsec_… signing secret. A sender that makes its own secret: paste it into Sender's secret under Rotate secret."
            : "In the sender's webhook settings: the Endpoint URL. It signs with its Ed25519 key (v1a), so there is no secret; a new key replaces this one with Change trigger.",
      };
    default:
      return { urlLabel: "Webhook URL", secretLabel: "Signing secret", settings: [], note: "" };
  }
}

/** A sample event id of each kind, as its sender names its events. */
const SAMPLE_EVENT_IDS: Record<ListenerKind, string> = {
  hmac: "3f1c9a52-7d4e-4b8a-9c21-5e6f7a8b9c0d",
  jwt: "3f1c9a52-7d4e-4b8a-9c21-5e6f7a8b9c0d",
  standardWebhooks: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
  github: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
  stripe: "evt_1NG8Du2eZvKYlo2CUI79vXWy",
};

/**
 * `ctx.webhook` for checking steps against `payload` as a delivery to this listener: the kind's
 * sample id, and the event type its scheme gives (GitHub's a header, so a sample `push`; Standard
 * Webhooks' and Stripe's the body's `type`). The contract's WebhookDelivery.
 */
export function sampleDelivery(webhook: Webhook, payload: unknown): components["schemas"]["WebhookDelivery"] {
  const kind = kindOf(webhook) ?? "hmac";
  const type = payload !== null && typeof payload === "object" && !Array.isArray(payload) ? (payload as { type?: unknown }).type : undefined;
  const eventType = kind === "github" ? "push" : (kind === "standardWebhooks" || kind === "stripe") && typeof type === "string" && /^[\x21-\x7E]{1,128}$/.test(type) ? type : null;
  const eventId = kind === "stripe" && typeof (payload as { id?: unknown } | null)?.id === "string" ? (payload as { id: string }).id : SAMPLE_EVENT_IDS[kind];
  return { eventId, eventType };
}
