// For senders: signs and posts an event to a webhook listener exactly as the intake checks it
// (seed 5.2). A partner team uses it to test its integration against the mock or the server.
import { createHash, createHmac, randomUUID } from "node:crypto";
import { importJWK, importPKCS8, SignJWT, type JWK } from "jose";

export type WebhookAuth =
  | { hmac: { secret: string } }
  | { jwt: { privateKey: JWK | string; kid: string; alg: "RS256" | "ES256" | "EdDSA"; baseUrl: string; lifetimeSeconds?: number } };

export interface WebhookEventToSend {
  /** The listener's complete URL (`IncomingWebhookTrigger.url`). */
  url: string;
  /** The raw body, sent byte for byte (signatures cover these exact bytes). */
  body: string;
  auth: WebhookAuth;
  /** Defaults: a new UUID v4 and the current Unix time. */
  eventId?: string;
  timestamp?: string;
  fetch?: typeof globalThis.fetch;
}

export interface SentWebhook {
  request: { url: string; headers: Record<string, string>; body: string };
  status: number;
  response: unknown;
}

/** Base64url (no padding) HMAC-SHA256 keyed by the secret's UTF-8 bytes over `{timestamp}.{event_id}.{body}`. */
export function hmacSignature(secret: string, timestamp: string, eventId: string, body: string | Uint8Array): string {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${eventId}.`).update(body).digest("base64url");
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

export async function sendWebhookEvent(event: WebhookEventToSend): Promise<SentWebhook> {
  const eventId = event.eventId ?? randomUUID();
  const timestamp = event.timestamp ?? String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = { "Content-Type": "application/json", "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId };
  if ("hmac" in event.auth) headers["Webhook-Signature"] = hmacSignature(event.auth.hmac.secret, timestamp, eventId, event.body);
  else headers.Authorization = `Bearer ${await webhookJwt(event.auth.jwt, event.url, eventId, event.body)}`;
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
