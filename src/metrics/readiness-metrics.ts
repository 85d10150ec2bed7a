// What /readyz answers, as gauges an alert can watch before a probe fails: each reason 1 while it
// holds (the reasons of core/readiness.ts, and stopping), how long since the database last answered
// the ping that `database-unreachable` reads (an outage's length, from its start, whatever the
// scrape and evaluation intervals), and how long the execution worker has had runs due without
// progress, which `workers-stuck` holds past EXECUTION_LEASE_SECONDS.
import { Gauge, type Registry } from "prom-client";
import { UNREADY_REASONS, type UnreadyReason } from "../core/readiness.js";

export interface ReadinessSources {
  /** The reasons as last seen: the database's from the background ping of the last second, no query. */
  reasons: () => readonly UnreadyReason[];
  stopping: () => boolean;
  /** How long since the database last answered the background ping (DatabaseReachability.unansweredMs). */
  unansweredMs: () => number;
  /** How long the worker has had runs due without progress (Worker.stalledMs). */
  stalledMs: () => number;
}

export function watchReadiness(registry: Registry, sources: ReadinessSources): void {
  new Gauge({
    name: "tenant_api_unready",
    help: "1 while the reason makes /readyz answer 503 (database-unreachable, workers-stuck, stopping), else 0.",
    labelNames: ["reason"],
    registers: [registry],
    collect() {
      const holding = sources.reasons();
      for (const reason of UNREADY_REASONS) this.set({ reason }, holding.includes(reason) ? 1 : 0);
      this.set({ reason: "stopping" }, sources.stopping() ? 1 : 0);
    },
  });
  new Gauge({
    name: "tenant_api_db_unanswered_seconds",
    help: "Seconds since the database last answered this process's ping (a select 1 every second): under about a second while it answers, it climbs through an outage from its start.",
    registers: [registry],
    collect() {
      this.set(sources.unansweredMs() / 1000);
    },
  });
  new Gauge({
    name: "tenant_api_execution_worker_stalled_seconds",
    help: "How long the execution worker has had runs due without progress (a claim answered, a run ended); 0 while none is due. Past EXECUTION_LEASE_SECONDS, /readyz answers workers-stuck.",
    registers: [registry],
    collect() {
      this.set(sources.stalledMs() / 1000);
    },
  });
}
