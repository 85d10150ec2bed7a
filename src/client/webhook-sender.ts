// For senders: signs and posts an event to a webhook listener exactly as the intake checks it
// (seed 5.2, and the guide's "Senders that sign their own way" for the senders' own schemes). A
// partner team uses it to test its integration against the mock or the server.
import { createHash, createHmac, createPrivateKey, randomBytes, randomUUID, sign, type KeyObject } from "node:crypto";
import { importJWK, importPKCS8, SignJWT, type JWK } from "jose";

export type WebhookAuth =
  | { hmac: { secret: string } }
  | { jwt: { privateKey: JWK | string; kid: string; alg: "RS256" | "ES256" | "EdDSA"; baseUrl: string; lifetimeSeconds?: number } }
  /** `v1` with the listener's `whsec_` secret, or `v1a` with the Ed25519 private key (PKCS#8 PEM) whose `whpk_` public key the listener holds. */
  | { standardWebhooks: { secret: string } | { privateKey: string | KeyObject } }
  /** `event` is `X-GitHub-Event` (`push`, `ping`...), which GitHub always sends. */
  | { github: { secret: string; event: string } }
  /** The event id is the body's `id`, as Stripe sends it: `eventId` is refused with this auth. */
  | { stripe: { secret: string } };

export interface WebhookEventToSend {
  /** The listener's complete URL (`IncomingWebhookTrigger.url`: its kind's URL for the senders' own schemes). */
  url: string;
  /** The raw body, sent byte for byte (signatures cover these exact bytes). */
  body: string;
  auth: WebhookAuth;
  /**
   * Defaults: a new id in the sender's form (a UUID v4, or `msg_` and 24 hex digits for Standard
   * Webhooks) and the current Unix time. GitHub signs no time: its requests carry no timestamp.
   */
  eventId?: string;
  timestamp?: string;
  fetch?: typeof globalThis.fetch;
}

export interface SentWebhook {
  request: { url: string; headers: Record<string, string>; body: string };
  status: number;
  response: unknown;
}

const hmacSha256 = (key: Buffer, ...parts: (string | Uint8Array)[]): Buffer => parts.reduce((h, part) => h.update(part), createHmac("sha256", key)).digest();

/** Base64url (no padding) HMAC-SHA256 keyed by the secret's UTF-8 bytes over `{timestamp}.{event_id}.{body}`. */
export function hmacSignature(secret: string, timestamp: string, eventId: string, body: string | Uint8Array): string {
  return hmacSha256(Buffer.from(secret, "utf8"), `${timestamp}.${eventId}.`, body).toString("base64url");
}

/** Base64url (no padding) SHA-256 of the body: the `htb_s256` claim. */
export const bodyHash = (body: string | Uint8Array): string => createHash("sha256").update(body).digest("base64url");

/** A JWT with the claims the intake requires: sub, aud, exp (within 10 minutes), jti, htm, htb_s256. */
export async function webhookJwt(auth: Extract<WebhookAuth, { jwt: unknown }>["jwt"], url: string, eventId: string, body: string): Promise<string> {
  const key = typeof auth.privateKey === "string" ? await importPKCS8(auth.privateKey, auth.alg) : await importJWK(auth.privateKey, auth.alg);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ htm: "POST", htb_s256: bodyHash(body) })
    .setProtectedHeader({ alg: auth.alg, kid: auth.kid, typ: "JWT" })
    .setSubject(auth.baseUrl)
    .setAudience(url)
    .setJti(eventId)
    .setIssuedAt(now)
    .setExpirationTime(now + Math.min(auth.lifetimeSeconds ?? 300, 600))
    .sign(key);
}

/** `webhook-signature`: `v1,` and the base64 HMAC-SHA256 keyed by the bytes after `whsec_`, or `v1a,` and the Ed25519 signature, of `{id}.{timestamp}.{body}`. */
export function standardWebhookSignature(auth: Extract<WebhookAuth, { standardWebhooks: unknown }>["standardWebhooks"], id: string, timestamp: string, body: string): string {
  const message = `${id}.${timestamp}.${body}`;
  if ("privateKey" in auth) {
    const key = typeof auth.privateKey === "string" ? createPrivateKey(auth.privateKey) : auth.privateKey;
    if (key.asymmetricKeyType !== "ed25519") throw new TypeError("a Standard Webhooks v1a key is an Ed25519 private key");
    return `v1a,${sign(null, Buffer.from(message, "utf8"), key).toString("base64")}`;
  }
  if (!auth.secret.startsWith("whsec_")) throw new TypeError("a Standard Webhooks secret begins with whsec_");
  return `v1,${hmacSha256(Buffer.from(auth.secret.slice("whsec_".length), "base64"), message).toString("base64")}`;
}

/** `X-Hub-Signature-256`: `sha256=` and the hex HMAC-SHA256 of the body, keyed by the secret's UTF-8 bytes. */
export const githubSignature = (secret: string, body: string): string => `sha256=${hmacSha256(Buffer.from(secret, "utf8"), body).toString("hex")}`;

/** `Stripe-Signature`: `t=` and `v1=`, the hex HMAC-SHA256 of `{t}.{body}` keyed by the UTF-8 bytes of the whole `whsec_` secret. */
export const stripeSignature = (secret: string, timestamp: string, body: string): string =>
  `t=${timestamp},v1=${hmacSha256(Buffer.from(secret, "utf8"), `${timestamp}.${body}`).toString("hex")}`;

/** The headers that identify, date and sign the event, as its listener's kind reads them. */
async function signedHeaders(event: WebhookEventToSend, timestamp: string): Promise<Record<string, string>> {
  const { auth, body } = event;
  if ("stripe" in auth) {
    if (event.eventId !== undefined) throw new TypeError("Stripe's event id is the body's id: leave eventId out");
    return { "Stripe-Signature": stripeSignature(auth.stripe.secret, timestamp, body) };
  }
  if ("standardWebhooks" in auth) {
    const id = event.eventId ?? `msg_${randomBytes(12).toString("hex")}`;
    return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": standardWebhookSignature(auth.standardWebhooks, id, timestamp, body) };
  }
  const eventId = event.eventId ?? randomUUID();
  if ("github" in auth) return { "X-GitHub-Delivery": eventId, "X-GitHub-Event": auth.github.event, "X-Hub-Signature-256": githubSignature(auth.github.secret, body) };
  const dated = { "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId };
  if ("hmac" in auth) return { ...dated, "Webhook-Signature": hmacSignature(auth.hmac.secret, timestamp, eventId, body) };
  return { ...dated, Authorization: `Bearer ${await webhookJwt(auth.jwt, event.url, eventId, body)}` };
}

export async function sendWebhookEvent(event: WebhookEventToSend): Promise<SentWebhook> {
  const timestamp = event.timestamp ?? String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = { "Content-Type": "application/json", ...(await signedHeaders(event, timestamp)) };
  const response = await (event.fetch ?? fetch)(event.url, { method: "POST", headers, body: event.body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { request: { url: event.url, headers, body: event.body }, status: response.status, response: parsed };
}
