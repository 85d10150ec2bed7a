// What the automations may use of the webhooks, and their only way in (test/architecture checks
// it; nothing in webhooks/ imports automations/): an automation's webhook trigger is checked and kept
// as its listener, with the listener's secrets; the worker sweeps the event records; and the intake
// hands each event it accepts to the automations through ExecutionHandOff, which they implement.
// The automations' `notify` steps call out through the webhooks' guarded outbound request (the
// JWKS fetch's), and seal their signing secrets with the webhooks' SecretBox.
export type { WebhookEvents } from "./events.js";
export type { ExecutionHandOff } from "./intake.js";
export type { Listener, Listeners } from "./listeners.js";
export { checkGivenSecret, holdsSecret, listenerUrl, type ListenerKind } from "./listener-kinds.js";
export type { WebhookDelivery } from "./sender-event.js";
export { checkTrigger } from "./webhook-trigger.js";
export type { SecretBox } from "./secret-box.js";
export type { OutboundAddressPolicy } from "./outbound-address.js";
export { OutboundError, guardedRequest, parseOutboundUrl, type OutboundOptions, type OutboundResponse, type OutboundSubject } from "./outbound-request.js";
