// What the intake reads of a delivery before authenticating it, by the listener's kind, each in the
// order of its header table: the body's headers, the kind's own headers, then the JSON body and,
// for Stripe, the event id in it; 400 or 415 on the first failure. What it reads is what the
// kind's authentication then checks, and what the event is recorded and run with.
import type { Clock } from "../core/clock.js";
import { parseJsonBody } from "./body.js";
import { checkBodyHeaders, parseWebhookHeaders, type HeaderBag } from "./headers.js";
import { readGithubHeaders } from "./github.js";
import type { ListenerKind } from "./listener-kinds.js";
import { bodyEventType, type WebhookDelivery } from "./sender-event.js";
import { readStandardWebhookHeaders } from "./standard-webhooks.js";
import { readStripeTimestamp, stripeEventId } from "./stripe.js";

interface Read {
  /** `ctx.webhook`: the event id deduplicated on, and the event's type where the scheme has one. */
  delivery: WebhookDelivery;
  /** The JSON body, `ctx.trigger`. */
  trigger: unknown;
}

export type ReadDelivery = Read &
  (
    | { kind: "hmac" | "jwt"; timestamp: string; eventIdRaw: string }
    | { kind: "standardWebhooks"; timestamp: string }
    | { kind: "github" }
    | { kind: "stripe"; timestamp: string | undefined }
  );

export function readDelivery(kind: ListenerKind, headers: HeaderBag, rawBody: Buffer, clock: Clock): ReadDelivery {
  switch (kind) {
    case "hmac":
    case "jwt": {
      const { timestamp, eventId, eventIdRaw } = parseWebhookHeaders(headers, clock);
      return { kind, timestamp, eventIdRaw, trigger: parseJsonBody(rawBody), delivery: { eventId, eventType: null } };
    }
    case "standardWebhooks": {
      checkBodyHeaders(headers);
      const { id, timestamp } = readStandardWebhookHeaders(headers, clock);
      const trigger = parseJsonBody(rawBody);
      return { kind, timestamp, trigger, delivery: { eventId: id, eventType: bodyEventType(trigger) } };
    }
    case "github": {
      checkBodyHeaders(headers);
      const { delivery, event } = readGithubHeaders(headers);
      return { kind, trigger: parseJsonBody(rawBody), delivery: { eventId: delivery, eventType: event } };
    }
    case "stripe": {
      checkBodyHeaders(headers);
      const timestamp = readStripeTimestamp(headers, clock);
      const trigger = parseJsonBody(rawBody);
      return { kind, timestamp, trigger, delivery: { eventId: stripeEventId(trigger), eventType: bodyEventType(trigger) } };
    }
  }
}
