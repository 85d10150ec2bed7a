// The metrics of one server, in a registry of its own (several servers may run in one process, as
// the tests run them): the observers the storage, the runner, the spends and the HTTP layer are
// given, the gauges read when scraped, and the listener Prometheus scrapes. Built only when
// METRICS_PORT is set; without it nothing observes and nothing is counted.
import { Registry } from "prom-client";
import type { Logger } from "../core/logger.js";
import type { Storage } from "../storage/connect.js";
import { DatabaseMetrics } from "./database-metrics.js";
import { ExecutionMetrics, type ExecutionSources } from "./execution-metrics.js";
import { HttpMetrics } from "./http-metrics.js";
import { listenForScrapes, type MetricsListener } from "./metrics-listener.js";
import { watchProcess, type Build } from "./process-metrics.js";
import { watchReadiness, type ReadinessSources } from "./readiness-metrics.js";
import { SpendMetrics } from "./spend-metrics.js";
import { WebhookMetrics } from "./webhook-metrics.js";

export class Metrics {
  private readonly registry = new Registry();
  readonly http = new HttpMetrics(this.registry);
  readonly webhooks = new WebhookMetrics(this.registry);
  readonly executions = new ExecutionMetrics(this.registry);
  readonly spends = new SpendMetrics(this.registry);
  readonly database: DatabaseMetrics;

  constructor(
    private readonly at: { port: number; host: string },
    dialect: Storage["dialect"],
    build: Build,
  ) {
    this.database = new DatabaseMetrics(this.registry, dialect);
    watchProcess(this.registry, build);
  }

  get requestObservers(): [HttpMetrics, WebhookMetrics] {
    return [this.http, this.webhooks];
  }

  /** Adds the gauges read when scraped, from the running server's parts, and listens for scrapes (METRICS_HOST, METRICS_PORT). */
  listen(sources: ExecutionSources & ReadinessSources, logger: Logger): Promise<MetricsListener> {
    this.executions.watch(sources);
    this.database.watch(sources.storage);
    watchReadiness(this.registry, sources);
    return listenForScrapes(this.registry, this.at.port, this.at.host, logger, this.http);
  }
}
