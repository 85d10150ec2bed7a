// Deliveries signed as Stripe signs them (https://docs.stripe.com/webhooks#verify-manually):
// `Stripe-Signature: t=<Unix seconds>,v1=<hex>[,v1=<hex>...]`, each `v1` the hex HMAC-SHA256 of
// `{t}.{body}` keyed by the UTF-8 bytes of the whole `whsec_` secret; the event id is the body's `id`.
// The `t=` is read with the other headers (400 outside the window); the header's absence and its
// signatures are authentication (401).
import { createHmac } from "node:crypto";
import type { Clock } from "../core/clock.js";
import { invalidField } from "../core/errors.js";
import { field, isUnixSeconds, TIMESTAMP_TOLERANCE_SECONDS, withinWindow, type HeaderBag } from "./headers.js";
import { checkSenderEventId } from "./sender-event.js";
import { firstMatch, MAX_SIGNATURES, signatureHeader, signatureMismatch } from "./signature-match.js";

export const STRIPE_SIGNATURE_HEADER = "Stripe-Signature";

/** The header's `key=value` entries, split at the first `=`. */
const entries = (header: string) =>
  header.split(",").map((entry) => {
    const at = entry.indexOf("=");
    return at < 0 ? { key: entry.trim(), value: "" } : { key: entry.slice(0, at).trim(), value: entry.slice(at + 1).trim() };
  });

/**
 * The `t=` of `Stripe-Signature`, checked against the window: 400 INVALID_TIMESTAMP unless it is
 * there once as decimal Unix seconds, TIMESTAMP_OUT_OF_WINDOW outside 300 s of the clock. Undefined
 * when the header is absent or repeated (authentication answers that, 401).
 */
export function readStripeTimestamp(headers: HeaderBag, clock: Clock): string | undefined {
  const header = headers[STRIPE_SIGNATURE_HEADER.toLowerCase()];
  if (typeof header !== "string" || header === "") return undefined;
  const stamps = entries(header).filter((e) => e.key === "t");
  const t = stamps[0]?.value;
  if (stamps.length !== 1 || t === undefined || !isUnixSeconds(t)) {
    throw invalidField(field(STRIPE_SIGNATURE_HEADER), "must carry t=, the Unix seconds of the signature, once", "INVALID_TIMESTAMP");
  }
  if (!withinWindow(t, clock, TIMESTAMP_TOLERANCE_SECONDS)) {
    throw invalidField(field(STRIPE_SIGNATURE_HEADER), `t= must be within ${TIMESTAMP_TOLERANCE_SECONDS} s of the server's time`, "TIMESTAMP_OUT_OF_WINDOW");
  }
  return t;
}

/** A Stripe event's id, the body's `id`: 400 INVALID_EVENT_ID unless the body is an object with one. */
export function stripeEventId(body: unknown): string {
  const id = body !== null && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>).id : undefined;
  if (id === undefined) throw invalidField("body.id", "is required: the body must be a JSON object with the event's id", "INVALID_EVENT_ID");
  return checkSenderEventId(typeof id === "string" ? id : "", "body.id");
}

/** The `v1` signature Stripe sends for `{t}.{body}`: hex HMAC-SHA256. */
export function stripeSignature(secret: string, timestamp: string, rawBody: Uint8Array): string {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.`, "utf8").update(rawBody).digest("hex");
}

/** 401 unless one `v1=` of the header (at most 16) is the signature of `{t}.{body}` with a secret valid now. */
export function verifyStripe(secrets: readonly string[], received: string | readonly string[] | undefined, timestamp: string | undefined, rawBody: Uint8Array): void {
  const header = signatureHeader(received, STRIPE_SIGNATURE_HEADER);
  const signatures = entries(header).filter((e) => e.key === "v1").map((e) => e.value);
  if (timestamp === undefined || signatures.length === 0 || signatures.length > MAX_SIGNATURES) throw signatureMismatch(STRIPE_SIGNATURE_HEADER);
  const expected = secrets.map((secret) => (secret.length === 0 ? "" : stripeSignature(secret, timestamp, rawBody)));
  if (firstMatch(expected, signatures) < 0) throw signatureMismatch(STRIPE_SIGNATURE_HEADER);
}
