// Deliveries signed as GitHub signs them
// (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries):
// `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`, keyed by the secret's UTF-8 bytes;
// the delivery's GUID in `X-GitHub-Delivery` (the event id) and the event's name in `X-GitHub-Event`.
// The scheme signs no timestamp: the 7-day deduplication of the delivery id is the replay defence.
import { createHmac } from "node:crypto";
import { invalidField } from "../core/errors.js";
import { field, required, type HeaderBag } from "./headers.js";
import { checkSenderEventId } from "./sender-event.js";
import { firstMatch, signatureHeader, signatureMismatch } from "./signature-match.js";

export const GITHUB_HEADERS = { delivery: "X-GitHub-Delivery", event: "X-GitHub-Event", signature: "X-Hub-Signature-256" } as const;

const EVENT_NAME = /^[a-z0-9_.-]{1,64}$/;

/** The delivery id and the event's name, in the order of the header table: 400 on the first failure. */
export function readGithubHeaders(headers: HeaderBag): { delivery: string; event: string } {
  const { delivery: deliveryHeader, event: eventHeader } = GITHUB_HEADERS;
  const delivery = checkSenderEventId(required(headers, deliveryHeader), field(deliveryHeader));
  const event = required(headers, eventHeader);
  if (!EVENT_NAME.test(event)) throw invalidField(field(eventHeader), "must be an event name: 1 to 64 lowercase letters, digits, '_', '.' or '-'", "INVALID_HEADER");
  return { delivery, event };
}

/** The signature GitHub sends: `sha256=` and the hex HMAC-SHA256 of the body. */
export function githubSignature(secret: string, rawBody: Uint8Array): string {
  return `sha256=${createHmac("sha256", Buffer.from(secret, "utf8")).update(rawBody).digest("hex")}`;
}

/** 401 unless `X-Hub-Signature-256` is the body's signature with one of the secrets valid now. */
export function verifyGithub(secrets: readonly string[], received: string | readonly string[] | undefined, rawBody: Uint8Array): void {
  const name = GITHUB_HEADERS.signature;
  const header = signatureHeader(received, name);
  if (firstMatch(secrets.map((secret) => (secret.length === 0 ? "" : githubSignature(secret, rawBody))), [header]) < 0) throw signatureMismatch(name);
}
