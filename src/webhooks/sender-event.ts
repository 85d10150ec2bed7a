// The event id and type of a delivery from a sender with a scheme of its own (Standard Webhooks,
// GitHub, Stripe): its id as the sender names it, deduplicated exactly as received, and its type
// where the scheme carries one. The contract's WebhookDelivery.
import { invalidField } from "../core/errors.js";

/** The id rule of the contract's event ids (WebhookEvent.eventId): also that of the replay's path. */
const SENDER_EVENT_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const EVENT_ID_RULE = "must be 1 to 128 letters, digits, '.', '_', ':' or '-', beginning with a letter or digit";

/** An event type the delivery log and `ctx.webhook` keep: printable ASCII without spaces, at most 128. */
const EVENT_TYPE = /^[\x21-\x7E]{1,128}$/;

/** `ctx.webhook`: the delivery an execution started from. */
export interface WebhookDelivery {
  eventId: string;
  eventType: string | null;
}

/** `value` as an event id; 400 INVALID_EVENT_ID naming `field` otherwise. */
export function checkSenderEventId(value: string, field: string): string {
  if (!SENDER_EVENT_ID.test(value)) throw invalidField(field, EVENT_ID_RULE, "INVALID_EVENT_ID");
  return value;
}

/** A JSON body's `type`, when it is a string the log keeps (Standard Webhooks' payload structure, a Stripe event); else null. */
export function bodyEventType(body: unknown): string | null {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return null;
  const type = (body as Record<string, unknown>).type;
  return typeof type === "string" && EVENT_TYPE.test(type) ? type : null;
}
