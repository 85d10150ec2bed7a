// HMAC authentication of an inbound webhook (seed 5.2): HMAC-SHA256 keyed by the secret string's
// UTF-8 bytes (not base64-decoded) over `{timestamp}.{event_id}.{body}` with the body's raw bytes,
// base64url without padding, in `Webhook-Signature`.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { unauthenticated } from "../core/errors.js";

export const SIGNATURE_HEADER = "Webhook-Signature";

/** The signature a sender computes: base64url (no padding) HMAC-SHA256. */
export function computeSignature(secret: string, timestamp: string, eventId: string, rawBody: Uint8Array): string {
  return createHmac("sha256", Buffer.from(secret, "utf8"))
    .update(Buffer.from(`${timestamp}.${eventId}.`, "utf8"))
    .update(rawBody)
    .digest("base64url");
}

// Both sides of the comparison are first MACed with a per-process random key: the results have the
// same length whatever the header's length or alphabet, so `timingSafeEqual` never throws and the
// time taken says nothing about how much of the signature matched.
const COMPARE_KEY = randomBytes(32);
const digest = (value: string) => createHmac("sha256", COMPARE_KEY).update(value, "utf8").digest();

/** Constant-time string equality, safe for any lengths and contents. */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/**
 * Verifies `Webhook-Signature` against each accepted secret (the current one, then the previous one
 * while its rotation grace period lasts). Returns the index of the secret that matched.
 * 401 MISSING_SIGNATURE without a signature, 401 INVALID_SIGNATURE when none matches.
 */
export function verifyHmac(
  secrets: readonly string[],
  header: string | readonly string[] | undefined,
  timestamp: string,
  eventIdRaw: string,
  rawBody: Uint8Array,
): number {
  if (header === undefined || header === "" || (Array.isArray(header) && header.length === 0)) {
    throw unauthenticated("MISSING_SIGNATURE", `the ${SIGNATURE_HEADER} header is required`);
  }
  // A repeated header (Node joins unknown repeated headers, so only a caller's array) never matches.
  if (typeof header !== "string") throw unauthenticated("INVALID_SIGNATURE", `the ${SIGNATURE_HEADER} header must be sent once`);
  let matched = -1;
  // Every secret is tried, without an early exit, so timing does not tell which one matched.
  secrets.forEach((secret, index) => {
    if (secret.length === 0) return; // an empty key is never a valid secret: anyone could sign with it
    const equal = constantTimeEqual(computeSignature(secret, timestamp, eventIdRaw, rawBody), header);
    if (equal && matched < 0) matched = index;
  });
  if (matched < 0) throw unauthenticated("INVALID_SIGNATURE", `the ${SIGNATURE_HEADER} does not match the request`);
  return matched;
}
