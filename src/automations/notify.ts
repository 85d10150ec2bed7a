// Delivery of a `notify` step's notification: a JSON POST signed as Standard Webhooks sign, through
// the webhooks' guarded outbound request, one attempt per run. An attempt that fails in a way that
// may pass parks the execution until the next on the retry schedule (hours, by default), holding no
// worker meanwhile; so does a destination with its cap of requests in flight from this process.
// Each attempt is recorded for the step's output, never the secret nor the request's headers, and
// traced as a client span that sends its `traceparent`.
// docs/automations.md, "Outbound notifications: the `notify` step".
import { createHmac, sign, type KeyObject } from "node:crypto";
import type { Clock } from "../core/clock.js";
import { invalidField } from "../core/errors.js";
import type { Origin } from "../core/origin.js";
import type { Span } from "../core/spans.js";
import { guardedRequest, OutboundError, parseOutboundUrl, type OutboundAddressPolicy, type OutboundOptions, type OutboundResponse, type OutboundSubject } from "../webhooks/for-automations.js";
import { CelEvaluationError } from "./cel.js";
import { destinationOf, type DestinationSlots } from "./destination-slots.js";
import type { NotificationDestinations } from "./notification-destinations.js";
import { signingKey } from "./notification-secrets.js";

/** How notifications are sent and tried again, server-wide (the configuration's `notifications`). */
export interface DeliverySettings {
  /** The waits before the attempts after the first (NOTIFY_RETRY_SCHEDULE): one more attempt each. */
  retryScheduleMs: readonly number[];
  /** One attempt, from the start to the last byte of the response read (NOTIFY_TIMEOUT_SECONDS). */
  attemptTimeoutMs: number;
}

/** DNS plus TCP connect, within an attempt. */
const CONNECT_TIMEOUT_MS = 5_000;

/** The longest `Retry-After` honoured: a receiver cannot park a notification for longer. */
const MAX_RETRY_AFTER_MS = 86_400_000;

/** Up to this share of a wait is added at random, so that what failed together is not tried again together. */
const JITTER = 0.2;

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
  settings: DeliverySettings;
  /** Requests in flight per destination from this process. */
  slots: DestinationSlots;
  /** The destinations' health: circuits, disabled ones. */
  destinations: NotificationDestinations;
}

/** What one run of a notify step came to. */
export type DeliveryOutcome =
  | { kind: "delivered"; delivery: Delivery }
  /** Refused for good, or out of attempts: `failure` is the step's error. */
  | { kind: "failed"; delivery: Delivery; failure: string }
  /** To be tried again at `until` (ms since the epoch): after a failure that may pass, or without an attempt while its destination is at its cap. */
  | { kind: "parked"; delivery: Delivery; until: number };

/**
 * What a notification is signed with: the automation's `whsec_` secrets (`v1,`, HMAC-SHA256, the
 * current one first), or its Ed25519 private key (`v1a,`).
 */
export type NotificationSigner = { kind: "hmac"; secrets: readonly string[] } | { kind: "ed25519"; privateKey: KeyObject };

/** The Standard Webhooks signature of one attempt: `v1,<base64 HMAC-SHA256>` per secret, separated by spaces. */
export function signature(secrets: readonly string[], webhookId: string, timestamp: number, body: string): string {
  return secrets.map((s) => `v1,${createHmac("sha256", signingKey(s)).update(`${webhookId}.${timestamp}.${body}`).digest("base64")}`).join(" ");
}

/** The `webhook-signature` of one attempt by `signer`: HMAC's `v1,` entries, or one `v1a,<base64 Ed25519 signature>`. */
export function signatureBy(signer: NotificationSigner, webhookId: string, timestamp: number, body: string): string {
  if (signer.kind === "hmac") return signature(signer.secrets, webhookId, timestamp, body);
  return `v1a,${sign(null, Buffer.from(`${webhookId}.${timestamp}.${body}`, "utf8"), signer.privateKey).toString("base64")}`;
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

/** An HTTP date as RFC 9110 makes them (IMF-fixdate): Date.parse alone takes far more. */
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** A `Retry-After` (seconds, or an HTTP date) as milliseconds from `now`; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  const ms = /^\d{1,10}$/.test(text) ? Number(text) * 1000 : HTTP_DATE.test(text) ? Date.parse(text) - now : NaN;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS) : undefined;
}

const jittered = (ms: number) => Math.round(ms * (1 + Math.random() * JITTER));

interface Attempt {
  record: DeliveryAttempt;
  retryable: boolean;
  describe: string;
  /** The receiver's `Retry-After` on a 429 or 503, in ms. */
  retryAfterMs?: number | undefined;
}

export class Notifier {
  constructor(
    private readonly clock: Clock,
    private readonly options: NotifierOptions,
  ) {}

  /**
   * One attempt to send `body` (JSON text) to `url`, after the `earlier` ones of the same
   * notification, unless its destination is disabled, its circuit open, or at its cap here.
   * `origin`: the execution's run (its span the parent of the attempt's client span).
   */
  async attempt(url: string, body: string, webhookId: string, signer: NotificationSigner, earlier: readonly DeliveryAttempt[], origin: Origin | undefined): Promise<DeliveryOutcome> {
    const { settings, slots, destinations } = this.options;
    const attempts = [...earlier];
    const delivery: Delivery = { webhookId, delivered: false, attempts };
    let target: URL;
    try {
      // Checked again at send: the URL was saved under the settings of that time.
      target = parseOutboundUrl(url, this.options, NOTIFICATION);
    } catch (e) {
      if (e instanceof OutboundError) return { kind: "failed", delivery, failure: `notification not sent: ${e.message}` };
      throw e;
    }
    const destination = destinationOf(target);
    const gate = await destinations.gate(destination, settings.attemptTimeoutMs);
    if (gate.kind === "disabled") return { kind: "failed", delivery, failure: `notification not sent: ${gate.reason}` };
    // Spread, so that the executions parked on one circuit do not all come due at once.
    if (gate.kind === "wait") return { kind: "parked", delivery, until: gate.until + Math.round(Math.random() * JITTER * settings.attemptTimeoutMs) };
    const free = slots.take(destination);
    // An attempt in flight ends within its timeout: a slot is free by then.
    if (!free) return { kind: "parked", delivery, until: this.clock.now() + jittered(settings.attemptTimeoutMs) };
    const n = earlier.length + 1;
    let attempt: Attempt;
    try {
      attempt = await this.send(target, body, webhookId, signer, n, earlier.length === 0 ? 0 : (settings.retryScheduleMs[n - 2] ?? 0), origin?.span);
    } finally {
      free();
    }
    attempts.push(attempt.record);
    const { status, error } = attempt.record;
    // An answer that is final shows the destination up (a 4xx included); one worth another attempt is
    // a failure of it; a refused address or URL says nothing of it.
    if (status !== null && !attempt.retryable) await destinations.answered(destination);
    else if (attempt.retryable && (await destinations.failed(destination, status === null ? (error ?? "FAILED") : `HTTP ${status}`, origin))) {
      return { kind: "failed", delivery, failure: `notification not delivered: ${attempt.describe}; its destination ${destination} is disabled now, after failing for too long` };
    }
    if (error === null) return { kind: "delivered", delivery: { ...delivery, delivered: true } };
    if (!attempt.retryable) return { kind: "failed", delivery, failure: `notification not delivered: ${attempt.describe} (final, not tried again)` };
    const wait = settings.retryScheduleMs[n - 1];
    if (wait === undefined) return { kind: "failed", delivery, failure: `notification not delivered after ${n} attempts; last: ${attempt.describe}` };
    return { kind: "parked", delivery, until: this.clock.now() + jittered(Math.max(wait, attempt.retryAfterMs ?? 0)) };
  }

  private async send(url: URL, body: string, webhookId: string, signer: NotificationSigner, n: number, waitedMs: number, parent: Span | undefined): Promise<Attempt> {
    const { settings } = this.options;
    const startedAt = new Date(this.clock.now()).toISOString();
    const timestamp = Math.floor(this.clock.now() / 1000);
    const began = performance.now();
    const span = parent?.recording
      ? // The host and port only: a receiver's path or query may hold a token of its own (as chat webhooks' do).
        parent.child("POST", { "http.request.method": "POST", "server.address": url.hostname, "server.port": Number(url.port || (url.protocol === "https:" ? 443 : 80)), "http.request.resend_count": n - 1 }, undefined, "client")
      : undefined;
    const record = (status: number | null, error: string | null, responseExcerpt: string | null): DeliveryAttempt => ({
      attempt: n,
      startedAt,
      waitedMs,
      durationMs: Math.round(performance.now() - began),
      status,
      error,
      responseExcerpt,
    });
    const traceparent = span?.traceparent();
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
            "webhook-signature": signatureBy(signer, webhookId, timestamp, body),
            ...(traceparent ? { traceparent } : {}),
          },
          body: Buffer.from(body, "utf8"),
          timeoutMs: settings.attemptTimeoutMs,
          connectTimeoutMs: Math.min(CONNECT_TIMEOUT_MS, settings.attemptTimeoutMs),
          maxBytes: MAX_RESPONSE_BYTES,
          overflow: "truncate",
        },
        this.options,
      );
      const { status } = response;
      span?.setAttribute("http.response.status_code", status);
      const ok = status >= 200 && status < 300;
      if (!ok) span?.fail(`HTTP ${status}`);
      return { record: record(status, ok ? null : "HTTP_STATUS", excerpt(response.body)), retryable: retryableStatus(status), describe: `HTTP ${status}`, retryAfterMs: retryAfter(response, this.clock.now()) };
    } catch (e) {
      if (!(e instanceof OutboundError)) throw e;
      span?.setAttribute("error.type", e.code);
      span?.fail(e.code);
      return { record: record(null, e.code, null), retryable: retryableFailure(e.code), describe: `${e.code}: ${e.message}` };
    } finally {
      span?.end();
    }
  }
}

/** The `Retry-After` of a 429 or 503, the statuses that carry it. */
const retryAfter = (response: OutboundResponse, now: number) => (response.status === 429 || response.status === 503 ? retryAfterMs(response.headers["retry-after"], now) : undefined);
