// Deliveries signed by the Standard Webhooks specification (https://www.standardwebhooks.com,
// spec/standard-webhooks.md): `webhook-id`, `webhook-timestamp`, and `webhook-signature`, a
// space-separated list of `v1,<base64 HMAC-SHA256>` (keyed by the decoded `whsec_` secret) or
// `v1a,<base64 Ed25519>` (the listener's `whpk_` public key) over `{id}.{timestamp}.{body}`. Any one
// matching signature is enough: a rotating sender signs with both secrets meanwhile.
import { createHmac, createPublicKey, verify, type KeyObject } from "node:crypto";
import type { Clock } from "../core/clock.js";
import { field, parseTimestamp, required, TIMESTAMP_TOLERANCE_SECONDS, type HeaderBag } from "./headers.js";
import { checkSenderEventId } from "./sender-event.js";
import { firstMatch, MAX_SIGNATURES, signatureHeader, signatureMismatch } from "./signature-match.js";

export const STANDARD_WEBHOOK_HEADERS = { id: "webhook-id", timestamp: "webhook-timestamp", signature: "webhook-signature" } as const;

const SECRET_PREFIX = "whsec_";
const PUBLIC_KEY_PREFIX = "whpk_";
const ED25519_KEY_BYTES = 32;

/** The delivery's id and timestamp, in the order of the header table: 400 on the first failure. */
export function readStandardWebhookHeaders(headers: HeaderBag, clock: Clock): { id: string; timestamp: string } {
  const { id: idHeader, timestamp: timestampHeader } = STANDARD_WEBHOOK_HEADERS;
  const id = checkSenderEventId(required(headers, idHeader), field(idHeader));
  const timestamp = parseTimestamp(required(headers, timestampHeader), clock, TIMESTAMP_TOLERANCE_SECONDS, timestampHeader);
  return { id, timestamp };
}

/** The HMAC key of a `whsec_` secret: its base64 part, decoded (empty for a secret of another form, which never matches). */
export function standardWebhookKey(secret: string): Buffer {
  return secret.startsWith(SECRET_PREFIX) ? Buffer.from(secret.slice(SECRET_PREFIX.length), "base64") : Buffer.alloc(0);
}

/** The Ed25519 key of a `whpk_` public key; undefined unless it is the base64 of 32 bytes that make a key. */
export function standardWebhookPublicKey(publicKey: string): KeyObject | undefined {
  if (!publicKey.startsWith(PUBLIC_KEY_PREFIX)) return undefined;
  const raw = Buffer.from(publicKey.slice(PUBLIC_KEY_PREFIX.length), "base64");
  if (raw.length !== ED25519_KEY_BYTES) return undefined;
  try {
    return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  } catch {
    return undefined;
  }
}

/** The listener's means of verifying: its `whsec_` secrets valid now (v1), or its public key (v1a). */
export type StandardWebhookVerifier = { secrets: readonly string[] } | { publicKey: string };

/**
 * 401 unless a signature of the header matches: MISSING_SIGNATURE without the header,
 * INVALID_SIGNATURE when it is repeated, carries more than 16 entries, or none of its entries of
 * the listener's version matches. Entries of other versions are ignored.
 */
export function verifyStandardWebhook(verifier: StandardWebhookVerifier, received: string | readonly string[] | undefined, id: string, timestamp: string, rawBody: Uint8Array): void {
  const name = STANDARD_WEBHOOK_HEADERS.signature;
  const entries = signatureHeader(received, name).split(" ").filter((entry) => entry !== "");
  if (entries.length > MAX_SIGNATURES) throw signatureMismatch(name);
  const version = "secrets" in verifier ? "v1," : "v1a,";
  const signatures = entries.filter((entry) => entry.startsWith(version)).map((entry) => entry.slice(version.length));
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), rawBody]);
  const matched = "secrets" in verifier ? matchesSecret(verifier.secrets, signatures, signed) : matchesPublicKey(verifier.publicKey, signatures, signed);
  if (!matched) throw signatureMismatch(name);
}

function matchesSecret(secrets: readonly string[], signatures: readonly string[], signed: Buffer): boolean {
  const expected = secrets.map((secret) => {
    const key = standardWebhookKey(secret);
    return key.length === 0 ? "" : createHmac("sha256", key).update(signed).digest("base64");
  });
  return firstMatch(expected, signatures) >= 0;
}

// A public key verifies; nothing secret is compared, so an early exit tells nothing.
function matchesPublicKey(publicKey: string, signatures: readonly string[], signed: Buffer): boolean {
  const key = standardWebhookPublicKey(publicKey);
  if (!key) return false;
  return signatures.some((signature) => {
    const bytes = Buffer.from(signature, "base64");
    return bytes.length === 64 && verify(null, signed, key, bytes);
  });
}
