// Checks an automation's webhook trigger as saved: its JWKS URL and source CIDRs. Returns the
// listener's configuration to store (listeners.ts); null when the automation has no webhook trigger.
import type { components } from "../../generated/api.js";
import { checkJwksUrl } from "./jwks-fetch.js";
import { parseCidrs } from "./source-ip.js";

type AutomationTriggerInput = components["schemas"]["AutomationTrigger"];

export interface WebhookTriggerConfig {
  method: "hmac" | "jwt";
  jwksUrl: string | null;
  allowedSourceCidrs: string[];
}

export function checkTrigger(triggers: readonly AutomationTriggerInput[], allowInsecureJwks: boolean, path = "automation.triggers"): WebhookTriggerConfig | null {
  const trigger = triggers[0];
  // A fund-event trigger has no listener (automations/fund-triggers.ts checks it).
  if (!trigger || !("webhook" in trigger) || !trigger.webhook) return null;
  const webhook = trigger.webhook;
  const at = `${path}[0].webhook`;
  const allowedSourceCidrs = parseCidrs(webhook.allowedSourceCidrs ?? [], `${at}.allowedSourceCidrs`);
  if ("jwt" in webhook && webhook.jwt) {
    const jwksUrl = checkJwksUrl(webhook.jwt.jwksUrl, `${at}.jwt.jwksUrl`, { allowInsecure: allowInsecureJwks });
    return { method: "jwt", jwksUrl, allowedSourceCidrs };
  }
  return { method: "hmac", jwksUrl: null, allowedSourceCidrs };
}
