// Checks an automation's webhook trigger as saved: its kind, JWKS URL, public key and source CIDRs.
// Returns the listener's configuration to store (listeners.ts); null when the automation has no
// webhook trigger.
import type { components } from "../../generated/api.js";
import { invalidField } from "../core/errors.js";
import { checkJwksUrl } from "./jwks-fetch.js";
import type { ListenerKind } from "./listener-kinds.js";
import { parseCidrs } from "./source-ip.js";
import { standardWebhookPublicKey } from "./standard-webhooks.js";

type AutomationTriggerInput = components["schemas"]["AutomationTrigger"];

export interface WebhookTriggerConfig {
  method: ListenerKind;
  jwksUrl: string | null;
  /** A `standardWebhooks` listener's `whpk_` key; null for every other. */
  publicKey: string | null;
  allowedSourceCidrs: string[];
}

export function checkTrigger(triggers: readonly AutomationTriggerInput[], allowInsecureJwks: boolean, path = "automation.triggers"): WebhookTriggerConfig | null {
  const trigger = triggers[0];
  // A fund-event trigger has no listener (automations/fund-triggers.ts checks it).
  if (!trigger || !("webhook" in trigger) || !trigger.webhook) return null;
  const webhook = trigger.webhook;
  const at = `${path}[0].webhook`;
  const allowedSourceCidrs = parseCidrs(webhook.allowedSourceCidrs ?? [], `${at}.allowedSourceCidrs`);
  const config = { jwksUrl: null, publicKey: null, allowedSourceCidrs };
  // The contract's oneof admits exactly one arm set.
  if ("jwt" in webhook && webhook.jwt) {
    return { ...config, method: "jwt", jwksUrl: checkJwksUrl(webhook.jwt.jwksUrl, `${at}.jwt.jwksUrl`, { allowInsecure: allowInsecureJwks }) };
  }
  if ("standardWebhooks" in webhook && webhook.standardWebhooks) {
    const publicKey = webhook.standardWebhooks.publicKey ?? null;
    if (publicKey !== null && !standardWebhookPublicKey(publicKey)) {
      throw invalidField(`${at}.standardWebhooks.publicKey`, "must be an Ed25519 public key: whpk_ and the base64 of its 32 bytes");
    }
    return { ...config, method: "standardWebhooks", publicKey };
  }
  if ("github" in webhook && webhook.github) return { ...config, method: "github" };
  if ("stripe" in webhook && webhook.stripe) return { ...config, method: "stripe" };
  return { ...config, method: "hmac" };
}
