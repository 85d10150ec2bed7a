// The inbound webhook intake (seed 4.3, 5.2, 6, 7), for every kind of listener, in the order the
// contract states: the listener (404, and so is one of another kind than the URL's), the source
// address (403), the body size (413), headers and body (400), authentication (401), then
// idempotency (409). Only a request that passed every check records its event id, and
// the record and the execution it starts commit together before the 200. The rate limits of the
// listener come where their keys are proven: failures of the address first, before any work, and
// the listener's own limit once the delivery authenticated, before its event id is checked.
import type { KnownWebhookEventOutcome } from "../../generated/enums.js";
import type { Clock } from "../core/clock.js";
import { ApiError, conflict, notFound, permissionDenied } from "../core/errors.js";
import { isPathId } from "../core/ids.js";
import { clientAddress } from "../core/ip-address.js";
import type { Origin } from "../core/origin.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import { readDelivery, type ReadDelivery } from "./deliveries.js";
import { toWebhookEvent, type WebhookEvent, type WebhookEvents } from "./events.js";
import { GITHUB_HEADERS, verifyGithub } from "./github.js";
import type { HeaderBag } from "./headers.js";
import { SIGNATURE_HEADER, verifyHmac } from "./hmac.js";
import type { JwksCache } from "./jwks-cache.js";
import { verifyWebhookJwt } from "./jwt.js";
import { listenerUrl, routeOf, type IntakeRoute } from "./listener-kinds.js";
import type { IntakeListener, Listeners } from "./listeners.js";
import type { WebhookDelivery } from "./sender-event.js";
import { isAllowed } from "./source-ip.js";
import { STANDARD_WEBHOOK_HEADERS, verifyStandardWebhook } from "./standard-webhooks.js";
import { STRIPE_SIGNATURE_HEADER, verifyStripe } from "./stripe.js";

export interface IncomingRequest {
  listenerId: string;
  /** The operation the request reached: a listener answers only at its kind's. */
  route: IntakeRoute;
  headers: HeaderBag;
  readBody: () => Promise<Buffer>;
  remoteAddress: string;
  forwardedFor: string | undefined;
  limits: IntakeLimits;
  /** Told the listener's authentication method once the listener is found: the HTTP layer labels the delivery's metrics with it. */
  authenticatesWith?: (method: IntakeListener["method"]) => void;
  /** Told once the delivery authenticated: only then may the request's trace continue the sender's (http/request-span.ts). */
  authenticated?: (() => void) | undefined;
}

/**
 * The rate limits of one request to the intake (http/rate-limit.ts). A listener's limit counts only
 * deliveries that authenticated, so that no one who merely knows its URL can spend its sender's
 * quota; failed authentications count against the sender's address on that listener, under a
 * smaller budget of their own, so that one address cannot make the intake verify without bound.
 */
export interface IntakeLimits {
  /** Before any work: 429 when the address has spent its failure budget on the listener. */
  screen(listenerId: string): void;
  /** The delivery authenticated: counts it against the listener's limit; 429 over it. */
  authenticated(listenerId: string): void;
  /** The delivery failed authentication: counts it against the address's failure budget on the listener. */
  failed(listenerId: string): void;
}

export const WebhookOutcome = {
  EXECUTED: "WEBHOOK_EVENT_OUTCOME_EXECUTED",
  NOT_RUN_DRAFT: "WEBHOOK_EVENT_OUTCOME_NOT_RUN_DRAFT",
  NOT_RUN_DISABLED: "WEBHOOK_EVENT_OUTCOME_NOT_RUN_DISABLED",
} as const satisfies Record<string, KnownWebhookEventOutcome>;

/**
 * Where the intake hands an event it accepted: the automations (automations/event-hand-off.ts, over
 * the execution worker of this process). The execution is recorded with the event, in its
 * transaction, and handed back once that committed.
 */
export interface ExecutionHandOff {
  /**
   * The execution of the automation's steps (JSON, as stored) the event starts, over its body
   * (`trigger`) and delivery (`webhook`), claimed at insert by this process's worker while it has room.
   */
  newExecution(automationId: string, eventId: string, context: { trigger: unknown; webhook?: WebhookDelivery }, steps: string, receivedAt: string, origin: Origin | undefined): AutomationExecutionsTable;
  /** Runs an execution from `newExecution` once its record committed. */
  recorded(execution: AutomationExecutionsTable): void;
  /** An execution from `newExecution` whose record failed: committed or not (a lost answer), it is not run here. */
  notRecorded(execution: AutomationExecutionsTable): void;
}

export class WebhookIntake {
  constructor(
    private readonly deps: {
      clock: Clock;
      listeners: Listeners;
      events: WebhookEvents;
      jwks: JwksCache;
      baseUrl: string;
      trustProxy: readonly string[];
      handOff: ExecutionHandOff;
    },
  ) {}

  /** `origin`: the request delivering the event, whose trace its execution continues. */
  async receive(request: IncomingRequest, origin?: Origin): Promise<WebhookEvent> {
    const { listeners, clock } = this.deps;
    // No listener has an id of another shape; the database is not asked (PostgreSQL refuses a NUL in text).
    if (!isPathId(request.listenerId)) throw listenerNotFound();
    request.limits.screen(request.listenerId);
    const listener = await listeners.findForIntake(request.listenerId);
    if (!listener || routeOf(listener.method) !== request.route) throw listenerNotFound();
    request.authenticatesWith?.(listener.method);
    const peer = clientAddress(request.remoteAddress, request.forwardedFor, this.deps.trustProxy);
    if (!isAllowed(JSON.parse(listener.allowed_cidrs) as string[], peer)) {
      throw permissionDenied("SOURCE_NOT_ALLOWED", "the source address is not in the listener's allowed CIDR ranges");
    }
    const rawBody = await request.readBody();
    const read = readDelivery(listener.method, request.headers, rawBody, clock);

    try {
      await this.authenticate(listener, request, read, rawBody);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) request.limits.failed(request.listenerId);
      throw e;
    }
    request.authenticated?.();
    request.limits.authenticated(request.listenerId);
    // A read that answers most duplicates where it spares a write; the record settles the rest.
    if (await this.deps.events.seen(listener.id, read.delivery.eventId)) throw duplicate();
    const { event, execution } = await this.record(listener, read.delivery, read.trigger, origin);
    if (execution) this.deps.handOff.recorded(execution);
    return event;
  }

  /** 401 unless the request carries a signature of the listener's sender, or a JWT its JWKS verifies. */
  private async authenticate(listener: IntakeListener, request: IncomingRequest, read: ReadDelivery, rawBody: Buffer): Promise<void> {
    const { listeners, clock } = this.deps;
    const header = (name: string) => request.headers[name.toLowerCase()];
    switch (read.kind) {
      case "hmac":
        return void verifyHmac(listeners.openSecrets(listener), header(SIGNATURE_HEADER), read.timestamp, read.eventIdRaw, rawBody);
      case "jwt":
        await verifyWebhookJwt({
          authorization: first(request.headers.authorization),
          jwksUrl: listener.jwks_url ?? "",
          cache: this.deps.jwks,
          baseUrl: this.deps.baseUrl,
          listenerUrl: listenerUrl(this.deps.baseUrl, listener.id, listener.method),
          eventId: read.eventIdRaw,
          rawBody,
          clock,
        });
        return;
      case "standardWebhooks": {
        const publicKey = listener.public_key ?? null;
        const verifier = publicKey === null ? { secrets: listeners.openSecrets(listener) } : { publicKey };
        return verifyStandardWebhook(verifier, header(STANDARD_WEBHOOK_HEADERS.signature), read.delivery.eventId, read.timestamp, rawBody);
      }
      case "github":
        return verifyGithub(listeners.openSecrets(listener), header(GITHUB_HEADERS.signature), rawBody);
      case "stripe":
        return verifyStripe(listeners.openSecrets(listener), header(STRIPE_SIGNATURE_HEADER), read.timestamp, rawBody);
    }
  }

  /**
   * Records the event and the execution it starts, unless the automation is a draft or its toggle
   * is off. The automation's state is the one read with the listener, a moment before: as if the
   * event had arrived that moment earlier.
   */
  private async record(listener: IntakeListener, delivery: WebhookDelivery, trigger: unknown, origin: Origin | undefined): Promise<{ event: WebhookEvent; execution?: AutomationExecutionsTable }> {
    const { clock, events, handOff } = this.deps;
    const { automation } = listener;
    const receivedAt = new Date(clock.now()).toISOString();
    const notRun =
      automation.is_draft === 1
        ? { outcome: WebhookOutcome.NOT_RUN_DRAFT, reason: "the automation is a draft (not published)" }
        : automation.enabled !== 1
          ? { outcome: WebhookOutcome.NOT_RUN_DISABLED, reason: "the automation's trigger toggle is not enabled" }
          : null;
    const execution = notRun ? undefined : handOff.newExecution(listener.automation_id, delivery.eventId, { trigger, webhook: delivery }, automation.steps, receivedAt, origin);
    const row = {
      listener_id: listener.id,
      event_id: delivery.eventId,
      event_type: delivery.eventType,
      automation_id: listener.automation_id,
      received_at: receivedAt,
      outcome: notRun?.outcome ?? WebhookOutcome.EXECUTED,
      not_run_reason: notRun?.reason ?? null,
      execution_id: execution?.id ?? null,
    };
    let recorded: boolean;
    try {
      recorded = await events.record(row, execution, origin);
    } catch (e) {
      if (execution) handOff.notRecorded(execution);
      throw e;
    }
    if (!recorded) throw duplicate();
    return { event: toWebhookEvent(row), execution };
  }
}

const listenerNotFound = () => notFound("LISTENER_NOT_FOUND", "no webhook listener with this id");

const duplicate = () => conflict("DUPLICATE_EVENT", "this event id was already received by this listener; the automation is not run again");

const first = (v: string | readonly string[] | undefined): string | undefined => (typeof v === "string" ? v : v?.[0]);
