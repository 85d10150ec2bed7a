// For receivers of `notify` steps' notifications: verifies one as Standard Webhooks verify, a `v1`
// signature of `{webhook-id}.{webhook-timestamp}.{body}` made by one of the receiver's `whsec_`
// secrets (or a `v1a` one by one of its `whpk_` public keys, notification-public-keys.ts) and a
// timestamp within the tolerance of now, then answers the parsed body. WebCrypto,
// atob and TextEncoder only, so it runs in Node 20+, browsers and edge runtimes alike. The reference's
// guide "Receiving notifications" shows it in use.
import { NotificationVerificationError } from "./notification-errors.js";
import { matchesEd25519, publicKeyBytes } from "./notification-public-keys.js";

/** A fetch `Headers`, or a record such as Node's `request.headers` (names in any case). */
export type NotificationHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyNotificationOptions {
  /** The automation's notification secrets, `whsec_<base64>`: during a rotation, the new one and the one it replaces. Verifies `v1,` signatures. */
  secrets?: readonly string[];
  /** The automation's public keys, `whpk_<base64>` (GetNotificationPublicKey), for steps signed with Ed25519. Verifies `v1a,` signatures. */
  publicKeys?: readonly string[];
  headers: NotificationHeaders;
  /** The body exactly as received, before any JSON parsing: the signature covers these bytes. */
  body: string | Uint8Array;
  /** How far `webhook-timestamp` may be from now, either way, in seconds (default 300, as Standard Webhooks' libraries). */
  toleranceSeconds?: number;
  /** The current time, in milliseconds since the epoch (default `Date.now()`). */
  now?: number;
}

export const DEFAULT_TOLERANCE_SECONDS = 300;

const PREFIX = "whsec_";
const SIGNATURE_BYTES = 32;
const encoder = new TextEncoder();

const refuse = (reason: NotificationVerificationError["reason"], message: string) => new NotificationVerificationError(reason, message);

function headerOf(headers: NotificationHeaders, name: string): string {
  let value: string | readonly string[] | null | undefined;
  if (typeof Headers !== "undefined" && headers instanceof Headers) value = headers.get(name);
  else {
    const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
    value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  }
  // Node gives a header sent twice as an array: a sender never does that, so it is refused, not guessed at.
  if (Array.isArray(value)) {
    if (value.length > 1) throw refuse("INVALID_HEADER", `${name} is sent more than once`);
    value = value[0];
  }
  if (typeof value !== "string" || value === "") throw refuse("MISSING_HEADER", `${name} is missing`);
  return value;
}

/** Bytes of standard base64, or undefined when it is not base64. */
function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** The HMAC key of a `whsec_` secret: its base64 part, decoded. A malformed secret is the caller's error (TypeError), never shown. */
function keyBytes(secret: string, index: number): Uint8Array<ArrayBuffer> {
  const bytes = secret.startsWith(PREFIX) ? base64Bytes(secret.slice(PREFIX.length)) : undefined;
  // The prefix is required: a listener's secret (keyed as UTF-8 text, not decoded) given here by mistake would never match.
  if (!bytes || bytes.length === 0) throw new TypeError(`secrets[${index}] is not a notification secret (whsec_ and base64)`);
  return bytes;
}

/**
 * Verifies a notification and answers its body, parsed. Throws NotificationVerificationError (with
 * its `reason`) when it must be refused, and TypeError when the options themselves are wrong (no
 * secret nor public key, a secret that is not `whsec_<base64>`, a public key that is not
 * `whpk_<base64>`, a negative tolerance). `v1` entries are checked with the secrets, `v1a` ones with
 * the public keys; entries of other versions are ignored, as Standard Webhooks asks.
 */
export async function verifyNotification<T = unknown>(options: VerifyNotificationOptions): Promise<T> {
  const { secrets = [], publicKeys = [], headers, body, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS, now = Date.now() } = options;
  if (secrets.length === 0 && publicKeys.length === 0) throw new TypeError("secrets or publicKeys: at least one notification secret or public key is needed");
  if (!Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) throw new TypeError("toleranceSeconds: a number of seconds, 0 or more");
  const keys = secrets.map(keyBytes);
  const verifyingKeys = publicKeys.map(publicKeyBytes);

  const id = headerOf(headers, "webhook-id");
  const timestamp = headerOf(headers, "webhook-timestamp");
  const signatures = headerOf(headers, "webhook-signature");
  if (!/^[0-9]{1,15}$/.test(timestamp)) throw refuse("INVALID_HEADER", "webhook-timestamp is not Unix seconds");
  const age = Math.floor(now / 1000) - Number(timestamp);
  if (age > toleranceSeconds) throw refuse("TIMESTAMP_TOO_OLD", `webhook-timestamp is ${age} s old, more than the ${toleranceSeconds} s allowed`);
  if (-age > toleranceSeconds) throw refuse("TIMESTAMP_TOO_NEW", `webhook-timestamp is ${-age} s ahead, more than the ${toleranceSeconds} s allowed`);

  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const bodyBytes = typeof body === "string" ? encoder.encode(body) : body;
  const signed = new Uint8Array(prefix.length + bodyBytes.length);
  signed.set(prefix);
  signed.set(bodyBytes, prefix.length);

  const candidates = signatures
    .split(" ")
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => base64Bytes(entry.slice(3)))
    .filter((bytes): bytes is Uint8Array<ArrayBuffer> => bytes?.length === SIGNATURE_BYTES);
  let matched = false;
  for (const raw of keys) {
    const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    // subtle.verify compares in constant time: the time taken tells nothing of the expected signature.
    for (const candidate of candidates) if (!matched) matched = await crypto.subtle.verify("HMAC", key, candidate, signed);
  }
  if (!matched && verifyingKeys.length > 0) matched = await matchesEd25519(verifyingKeys, signatures, signed);
  if (!matched) throw refuse("NO_MATCHING_SIGNATURE", "no v1 or v1a signature of webhook-signature is one the secrets or public keys make");

  try {
    return JSON.parse(typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: true }).decode(body)) as T;
  } catch {
    throw refuse("INVALID_BODY", "the body is not JSON in UTF-8");
  }
}
