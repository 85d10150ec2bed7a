// An automation's webhook trigger, read from an answer: the trigger is a oneof (webhook or
// fundEvents), so the typed answer names `webhook` only once the arm is known.
import type { components } from "../../generated/api.js";

type IncomingWebhookTrigger = components["schemas"]["IncomingWebhookTrigger"];

/** The automation's webhook trigger; undefined when it has none (no trigger, or a fund-event one). */
export function webhookTrigger(automation: { triggers?: components["schemas"]["AutomationTrigger"][] }): IncomingWebhookTrigger | undefined {
  const trigger = automation.triggers?.[0];
  return trigger && "webhook" in trigger && trigger.webhook ? trigger.webhook : undefined;
}
