// The API's requests: per operation, the answers by status class and how long they took; the error
// answers by their reason; the 429s by the limit that refused them; and the connections refused for
// want of file descriptors, by listener. The labels are the contract's operation ids and reasons and
// the server's own names: a path, an id or anything a caller sends never becomes one.
import { Counter, Histogram, type Registry } from "prom-client";
import type { ErrorReason } from "../core/errors.js";
import type { ListenerName, RefusedConnectionsObserver } from "../http/refused-connections.js";
import type { RequestObserver, RequestOutcome } from "../http/request-outcome.js";

/** The operation label of a request no operation of the contract matched (/healthz, /readyz, /docs, /console, an unknown path). */
export const UNMATCHED = "unmatched";

/** Seconds, from 1 ms to 10 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The limit label of the other 429: the token endpoint's failed attempts per client id and address (identity/failure-throttle.ts). */
const CLIENT_FAILURES = "client-failures";

const statusClass = (status: number): string => `${Math.floor(status / 100)}xx`;

export class HttpMetrics implements RequestObserver, RefusedConnectionsObserver {
  private readonly requests: Counter<"operation" | "status_class">;
  private readonly duration: Histogram<"operation">;
  private readonly refusals: Counter<"reason">;
  private readonly rateLimited: Counter<"limit">;
  private readonly connectionsRefused: Counter<"listener" | "reason">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({ name: "tenant_api_http_requests_total", help: "Requests answered, by operation id and status class.", labelNames: ["operation", "status_class"], registers });
    this.duration = new Histogram({ name: "tenant_api_http_request_duration_seconds", help: "Time from a request's arrival to its answer sent, by operation id.", labelNames: ["operation"], buckets: LATENCY_BUCKETS, registers });
    this.refusals = new Counter({ name: "tenant_api_http_refusals_total", help: "Error answers, by the contract's ErrorReason (requests Node's HTTP parser refused included).", labelNames: ["reason"], registers });
    this.rateLimited = new Counter({ name: "tenant_api_http_rate_limited_total", help: "429 answers, by the limit that refused them.", labelNames: ["limit"], registers });
    this.connectionsRefused = new Counter({ name: "tenant_api_http_connections_refused_total", help: "Connections closed unserved for want of file descriptors, by listener (api, metrics) and reason: open-file-limit (past the listener's cap, kept below the process's open-file limit), or the code of the accept() that failed (EMFILE, ENFILE).", labelNames: ["listener", "reason"], registers });
  }

  answered(o: RequestOutcome): void {
    const operation = o.operationId ?? UNMATCHED;
    this.requests.inc({ operation, status_class: statusClass(o.status) });
    this.duration.observe({ operation }, o.durationMs / 1000);
    if (o.reason !== undefined) this.refusals.inc({ reason: o.reason });
    if (o.status === 429) this.rateLimited.inc({ limit: o.rateLimit ?? CLIENT_FAILURES });
  }

  /** A request Node's HTTP parser refused (http/client-error.ts), which no step of the app saw. */
  parserRefused(reason: ErrorReason): void {
    this.refusals.inc({ reason });
  }

  connectionRefused(listener: ListenerName, reason: string): void {
    this.connectionsRefused.inc({ listener, reason });
  }
}
