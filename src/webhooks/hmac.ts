// HMAC authentication of an inbound webhook (seed 5.2): HMAC-SHA256 keyed by the secret string's
// UTF-8 bytes (not base64-decoded) over `{timestamp}.{event_id}.{body}` with the body's raw bytes,
// base64url without padding, in `Webhook-Signature`.
import { createHmac } from "node:crypto";
import { firstMatch, signatureHeader, signatureMismatch } from "./signature-match.js";

export const SIGNATURE_HEADER = "Webhook-Signature";

/** The signature a sender computes: base64url (no padding) HMAC-SHA256. */
export function computeSignature(secret: string, timestamp: string, eventId: string, rawBody: Uint8Array): string {
  return createHmac("sha256", Buffer.from(secret, "utf8"))
    .update(Buffer.from(`${timestamp}.${eventId}.`, "utf8"))
    .update(rawBody)
    .digest("base64url");
}

/**
 * Verifies `Webhook-Signature` against each accepted secret (the current one, then the previous one
 * while its rotation grace period lasts). Returns the index of the secret that matched.
 * 401 MISSING_SIGNATURE without a signature, 401 INVALID_SIGNATURE when none matches.
 */
export function verifyHmac(secrets: readonly string[], received: string | readonly string[] | undefined, timestamp: string, eventIdRaw: string, rawBody: Uint8Array): number {
  const header = signatureHeader(received, SIGNATURE_HEADER);
  // An empty key is never a valid secret: anyone could sign with it.
  const matched = firstMatch(
    secrets.map((secret) => (secret.length === 0 ? "" : computeSignature(secret, timestamp, eventIdRaw, rawBody))),
    [header],
  );
  if (matched < 0) throw signatureMismatch(SIGNATURE_HEADER);
  return matched;
}
