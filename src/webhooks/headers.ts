// The intake headers of an inbound webhook (seed 4.3): Content-Type, Webhook-Timestamp and
// Webhook-Event-Id, each parsed strictly, and the body's charset and Content-Encoding by the one rule
// of JSON bodies (core/json-body). Every failure is a 400 naming the header, but a charset or
// encoding the API would not take either, 415; values are not echoed back (they are
// attacker-controlled and may be large).
import type { Clock } from "../core/clock.js";
import { invalidField } from "../core/errors.js";
import { checkContentEncoding, checkJsonCharset, unsupportedBodyEncoding } from "../core/json-body.js";

/** Headers as Node gives them (`IncomingMessage.headers`): lowercase names. */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

export interface WebhookHeaders {
  /** `Webhook-Timestamp` exactly as received (it is part of the HMAC input). */
  timestamp: string;
  /** `Webhook-Event-Id` in lowercase: the idempotency key (ids compare case-insensitively). */
  eventId: string;
  /** `Webhook-Event-Id` exactly as received (it is part of the HMAC input). */
  eventIdRaw: string;
}

export interface WebhookHeaderOptions {
  /** Largest accepted distance between the timestamp and the clock, either way. Default 300 s. */
  toleranceSeconds?: number;
}

/** Seed 4.3 / 8: within 5 minutes of the server's time, either way; exactly 300 s is accepted. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

export const CONTENT_TYPE = "Content-Type";
export const CONTENT_ENCODING = "Content-Encoding";
export const TIMESTAMP_HEADER = "Webhook-Timestamp";
export const EVENT_ID_HEADER = "Webhook-Event-Id";

// `application/json`, case-insensitive, optionally followed by parameters (`; charset=utf-8`).
// `application/jsonp`, `application/json-seq` or `application/problem+json` do not match.
const JSON_MEDIA_TYPE = /^[\t ]*application\/json[\t ]*(?:;.*)?$/is;
// Plain decimal Unix seconds: no sign, space, decimal point or exponent; at most 19 digits.
const UNIX_SECONDS = /^[0-9]{1,19}$/;
// UUID version 4: version nibble 4, variant 10xx (8, 9, a, b).
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export const field = (header: string) => `headers.${header}`;

/** One header's value: a repeated header (an array) is malformed, an empty one is missing. */
export function single(headers: HeaderBag, name: string): string | undefined | null {
  const lower = name.toLowerCase();
  let value = headers[lower];
  if (value === undefined) {
    for (const [key, v] of Object.entries(headers)) {
      if (key.toLowerCase() === lower) {
        value = v;
        break;
      }
    }
  }
  if (Array.isArray(value)) return null;
  return value === undefined || value === "" ? undefined : value;
}

/** A required header's one value: 400 MISSING_HEADER when absent or empty, INVALID_HEADER when repeated. */
export function required(headers: HeaderBag, name: string): string {
  const value = single(headers, name);
  if (value === undefined) throw invalidField(field(name), "is required", "MISSING_HEADER");
  if (value === null) throw invalidField(field(name), "must be sent once", "INVALID_HEADER");
  return value;
}

/** 400 unless the Content-Type is `application/json` (parameters allowed, type case-insensitive). */
export function checkContentType(value: string | undefined): void {
  if (value === undefined || value === "") throw invalidField(field(CONTENT_TYPE), "is required", "MISSING_HEADER");
  if (!JSON_MEDIA_TYPE.test(value)) {
    throw invalidField(field(CONTENT_TYPE), "must be application/json", "UNSUPPORTED_CONTENT_TYPE");
  }
}

/** Whether `value`, decimal Unix seconds, is within `toleranceSeconds` of the clock either way. */
export function withinWindow(value: string, clock: Clock, toleranceSeconds: number): boolean {
  if (!Number.isSafeInteger(toleranceSeconds) || toleranceSeconds < 0) throw new TypeError("toleranceSeconds must be a non-negative integer");
  // BigInt: 19 digits exceed Number's exact range; the comparison must stay exact.
  const skew = BigInt(value) - BigInt(Math.floor(clock.now() / 1000));
  const tolerance = BigInt(toleranceSeconds);
  return skew <= tolerance && skew >= -tolerance;
}

/** Plain decimal Unix seconds: no sign, space, decimal point or exponent; at most 19 digits. */
export const isUnixSeconds = (value: string): boolean => UNIX_SECONDS.test(value);

/**
 * A timestamp header's value (`Webhook-Timestamp`, or Standard Webhooks' `webhook-timestamp`),
 * checked: a plain decimal string of Unix seconds within `toleranceSeconds` of the clock either way.
 * Returned as received.
 */
export function parseTimestamp(value: string | undefined, clock: Clock, toleranceSeconds = TIMESTAMP_TOLERANCE_SECONDS, header = TIMESTAMP_HEADER): string {
  if (value === undefined || value === "") throw invalidField(field(header), "is required", "MISSING_HEADER");
  if (!isUnixSeconds(value)) throw invalidField(field(header), "must be a decimal string of Unix seconds", "INVALID_TIMESTAMP");
  if (!withinWindow(value, clock, toleranceSeconds)) {
    throw invalidField(field(header), `must be within ${toleranceSeconds} s of the server's time`, "TIMESTAMP_OUT_OF_WINDOW");
  }
  return value;
}

/** The `Webhook-Event-Id` value, checked as a UUID v4: lowercase and as received. */
export function parseEventId(value: string | undefined): { eventId: string; eventIdRaw: string } {
  if (value === undefined || value === "") throw invalidField(field(EVENT_ID_HEADER), "is required", "MISSING_HEADER");
  if (!UUID_V4.test(value)) throw invalidField(field(EVENT_ID_HEADER), "must be a UUID v4", "INVALID_EVENT_ID");
  return { eventId: value.toLowerCase(), eventIdRaw: value };
}

/** The headers of the body every intake checks first: Content-Type, its charset, Content-Encoding. */
export function checkBodyHeaders(headers: HeaderBag): void {
  const contentType = required(headers, CONTENT_TYPE);
  checkContentType(contentType);
  checkJsonCharset(contentType);
  const encoding = single(headers, CONTENT_ENCODING);
  // Sent twice, it lists codings applied one after the other: not `identity` either.
  if (encoding === null) throw unsupportedBodyEncoding();
  checkContentEncoding(encoding);
}

/**
 * Checks the intake headers in order (Content-Type, its charset, Content-Encoding, timestamp, event
 * id); 400 on the first failure, 415 for a charset or encoding.
 */
export function parseWebhookHeaders(headers: HeaderBag, clock: Clock, options: WebhookHeaderOptions = {}): WebhookHeaders {
  checkBodyHeaders(headers);
  const timestamp = parseTimestamp(required(headers, TIMESTAMP_HEADER), clock, options.toleranceSeconds);
  const { eventId, eventIdRaw } = parseEventId(required(headers, EVENT_ID_HEADER));
  return { timestamp, eventId, eventIdRaw };
}
