// Delivery of a `notify` step's notification: a JSON POST signed as Standard Webhooks sign, through
// the webhooks' guarded outbound request, tried again with backoff while the failure may pass,
// within a bounded number of attempts and a total time well below the execution lease. Each attempt
// is recorded for the step's output, never the secret nor the request's headers.
// docs/automations.md, "Outbound notifications: the `notify` step".
import { createHmac } from "node:crypto";
import type { Clock } from "../core/clock.js";
import { invalidField } from "../core/errors.js";
import { guardedRequest, OutboundError, parseOutboundUrl, type OutboundAddressPolicy, type OutboundOptions, type OutboundSubject } from "../webhooks/for-automations.js";
import { CelEvaluationError } from "./cel.js";
import { signingKey } from "./notification-secrets.js";

/** The bounds of one step's delivery. */
export interface DeliveryBounds {
  maxAttempts: number;
  /** One attempt, from the start to the last byte of the response read. */
  attemptTimeoutMs: number;
  /** DNS plus TCP connect, within an attempt. */
  connectTimeoutMs: number;
  /** The whole delivery, backoffs included. */
  totalMs: number;
  /** The wait before the second attempt; it doubles for each one after (with up to half of it added at random). */
  firstBackoffMs: number;
}

export const DELIVERY_DEFAULTS: DeliveryBounds = { maxAttempts: 5, attemptTimeoutMs: 5_000, connectTimeoutMs: 2_000, totalMs: 20_000, firstBackoffMs: 500 };

/** The delivery's total time within a lease of `leaseMs`: a third of it at most, so a run that retries keeps its lease with room for its save. */
export const deliveryTotalMs = (leaseMs: number, totalMs = DELIVERY_DEFAULTS.totalMs): number => Math.min(totalMs, Math.floor(leaseMs / 3));

/** The response body read at most, and the characters of it an attempt records. */
const MAX_RESPONSE_BYTES = 4096;
const EXCERPT_CHARS = 256;

/** The largest body, as JSON: the body limit of an incoming webhook. */
export const MAX_NOTIFICATION_BODY_BYTES = 65_536;

/** The body a `bodyCel` value makes: its JSON text, refused over MAX_NOTIFICATION_BODY_BYTES. */
export function notificationBody(value: unknown, path: string): string {
  const text = JSON.stringify(value) ?? "null";
  if (Buffer.byteLength(text, "utf8") > MAX_NOTIFICATION_BODY_BYTES) {
    throw new CelEvaluationError("VALUE_TOO_LARGE", `${path}: the notification body is larger than ${MAX_NOTIFICATION_BODY_BYTES} bytes as JSON (the body limit of an incoming webhook)`);
  }
  return text;
}

const USER_AGENT = "tenant-access-api-notifications";

const NOTIFICATION: OutboundSubject = { noun: "notification", error: (code, message, options) => new OutboundError(code, message, options) };

/** Save-time check of a notify step's URL: 400 INVALID_NOTIFICATION_URL naming `path` when no attempt could ever be made. */
export function checkNotificationUrl(raw: string, path: string, policy: OutboundAddressPolicy): string {
  try {
    return parseOutboundUrl(raw, policy, NOTIFICATION).toString();
  } catch (e) {
    if (e instanceof OutboundError) throw invalidField(path, e.message.replace(/^the notification URL /, ""), "INVALID_NOTIFICATION_URL");
    throw e;
  }
}

export interface DeliveryAttempt {
  attempt: number;
  startedAt: string;
  /** The backoff waited before this attempt. */
  waitedMs: number;
  durationMs: number;
  /** The HTTP status received, or null when none was. */
  status: number | null;
  /** Null, or the class of the failure: TIMEOUT, CONNECT_FAILED, DNS_FAILED, ADDRESS_REFUSED, HTTP_STATUS... */
  error: string | null;
  responseExcerpt: string | null;
}

export interface Delivery {
  webhookId: string;
  delivered: boolean;
  attempts: DeliveryAttempt[];
}

export interface DeliveryResult {
  delivery: Delivery;
  /** Why it was not delivered (the step's error); undefined when it was. */
  failure?: string;
}

export interface NotifierOptions extends OutboundOptions {
  bounds: DeliveryBounds;
}

/** The Standard Webhooks signature of one attempt: `v1,<base64 HMAC-SHA256>` per secret, separated by spaces. */
export function signature(secrets: readonly string[], webhookId: string, timestamp: number, body: string): string {
  return secrets.map((s) => `v1,${createHmac("sha256", signingKey(s)).update(`${webhookId}.${timestamp}.${body}`).digest("base64")}`).join(" ");
}

/** At most EXCERPT_CHARS of a response body, as text, control characters replaced. */
function excerpt(body: Buffer): string | null {
  if (body.length === 0) return null;
  // eslint-disable-next-line no-control-regex
  return [...body.toString("utf8")].slice(0, EXCERPT_CHARS).join("").replace(/[\u0000-\u001f\u007f-\u009f]/g, " ");
}

/** Whether a status is worth another attempt. */
const retryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;
/** Whether a failure to get any answer is worth another attempt (a refused address or URL never is). */
const retryableFailure = (code: string) => code === "TIMEOUT" || code === "CONNECT_FAILED" || code === "DNS_FAILED";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Notifier {
  constructor(
    private readonly clock: Clock,
    private readonly options: NotifierOptions,
  ) {}

  /** Sends `body` (JSON text) to `url` until delivered, refused for good, or out of attempts or time. */
  async deliver(url: string, body: string, webhookId: string, secrets: readonly string[]): Promise<DeliveryResult> {
    const { bounds } = this.options;
    const attempts: DeliveryAttempt[] = [];
    const delivery: Delivery = { webhookId, delivered: false, attempts };
    let target: URL;
    try {
      // Checked again at send: the URL was saved under the settings of that time.
      target = parseOutboundUrl(url, this.options, NOTIFICATION);
    } catch (e) {
      if (e instanceof OutboundError) return { delivery, failure: `notification not sent: ${e.message}` };
      throw e;
    }
    // Durations in real time (performance.now), not the injected clock: they bound real waits.
    const start = performance.now();
    let last = "";
    for (let n = 1; n <= bounds.maxAttempts; n++) {
      const base = bounds.firstBackoffMs * 2 ** (n - 2);
      const waitedMs = n === 1 ? 0 : Math.round(base + Math.random() * (base / 2));
      const left = bounds.totalMs - (performance.now() - start) - waitedMs;
      // An attempt with less than a connect's time left could not succeed: give up now.
      if (n > 1 && left < Math.min(bounds.connectTimeoutMs, bounds.attemptTimeoutMs)) {
        return { delivery, failure: `notification not delivered within ${bounds.totalMs} ms (${attempts.length} attempts); last: ${last}` };
      }
      if (waitedMs > 0) await sleep(waitedMs);
      const attempt = await this.attempt(target, body, webhookId, secrets, n, waitedMs, Math.min(bounds.attemptTimeoutMs, left), bounds.connectTimeoutMs);
      attempts.push(attempt.record);
      if (attempt.record.status !== null && attempt.record.status >= 200 && attempt.record.status < 300) {
        delivery.delivered = true;
        return { delivery };
      }
      last = attempt.describe;
      if (!attempt.retryable) return { delivery, failure: `notification not delivered: ${last} (final, not tried again)` };
    }
    return { delivery, failure: `notification not delivered after ${attempts.length} attempts; last: ${last}` };
  }

  private async attempt(url: URL, body: string, webhookId: string, secrets: readonly string[], n: number, waitedMs: number, timeoutMs: number, connectTimeoutMs: number) {
    const startedAt = new Date(this.clock.now()).toISOString();
    const timestamp = Math.floor(this.clock.now() / 1000);
    const began = performance.now();
    const record = (status: number | null, error: string | null, responseExcerpt: string | null): DeliveryAttempt => ({
      attempt: n,
      startedAt,
      waitedMs,
      durationMs: Math.round(performance.now() - began),
      status,
      error,
      responseExcerpt,
    });
    try {
      const response = await guardedRequest(
        url,
        NOTIFICATION,
        {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "webhook-id": webhookId,
            "webhook-timestamp": String(timestamp),
            "webhook-signature": signature(secrets, webhookId, timestamp, body),
          },
          body: Buffer.from(body, "utf8"),
          timeoutMs,
          connectTimeoutMs: Math.min(connectTimeoutMs, timeoutMs),
          maxBytes: MAX_RESPONSE_BYTES,
          overflow: "truncate",
        },
        this.options,
      );
      const { status } = response;
      const ok = status >= 200 && status < 300;
      return { record: record(status, ok ? null : "HTTP_STATUS", excerpt(response.body)), retryable: retryableStatus(status), describe: `HTTP ${status}` };
    } catch (e) {
      if (!(e instanceof OutboundError)) throw e;
      return { record: record(null, e.code, null), retryable: retryableFailure(e.code), describe: `${e.code}: ${e.message}` };
    }
  }
}
