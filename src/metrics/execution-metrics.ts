// The executions of automations: how many wait in the database and how many this process runs now
// (read when scraped), how each run ended and how long after its event was accepted, and the runs
// that resumed an execution or lost their lease.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { KnownAutomationExecutionState } from "../../generated/enums.js";
import type { RunObserver } from "../automations/run-observer.js";
import type { Clock } from "../core/clock.js";
import { countRunnable } from "../automations/execution-claims.js";
import type { Storage } from "../storage/connect.js";

/** Seconds from an event's acceptance to its execution's end: 1 ms to 5 minutes (a lease, a backlog). */
export const LAG_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * The waiting executions are counted in the database: at most once per WAITING_TTL_MS whatever the
 * scrapes (every instance counts the same rows), up to WAITING_CAP (a seek of that many index
 * entries at most), and the scrape waits WAITING_DEADLINE_MS at most for the count.
 */
export const WAITING = { ttlMs: 5_000, cap: 10_000, deadlineMs: 1_000 } as const;

export interface ExecutionSources {
  storage: Storage;
  clock: Clock;
  /** The executions whose runs are under way in this process (the worker's). */
  runs: () => readonly string[];
  /** How many notification destinations are in each state (counted in the database). */
  destinations: () => Promise<ReadonlyArray<{ state: string; count: number }>>;
}

/** The states of a notification destination the gauge always shows (0 when none is in it). */
const DESTINATION_STATES = ["NOTIFICATION_DESTINATION_STATE_HEALTHY", "NOTIFICATION_DESTINATION_STATE_FAILING", "NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN", "NOTIFICATION_DESTINATION_STATE_DISABLED"];

/**
 * A value read from the database at most once per WAITING.ttlMs whatever the scrapes (every instance
 * reads the same rows); a scrape waits WAITING.deadlineMs at most for it, else answers `late`.
 */
class ThrottledRead<T> {
  private last: { value: T; at: number } | undefined;
  private reading: Promise<T> | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly late: T,
  ) {}

  async value(): Promise<T> {
    if (this.last && performance.now() - this.last.at < WAITING.ttlMs) return this.last.value;
    this.reading ??= this.read()
      .then((value) => ((this.last = { value, at: performance.now() }), value))
      .finally(() => (this.reading = undefined));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<T>((resolve) => (timer = setTimeout(() => resolve(this.late), WAITING.deadlineMs)));
    try {
      return await Promise.race([this.reading.catch(() => this.late), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

export class ExecutionMetrics implements RunObserver {
  private readonly ended: Counter<"state">;
  private readonly lag: Histogram;
  private readonly resumes: Counter;
  private readonly leasesLost: Counter;
  private readonly parks: Counter;

  constructor(private readonly registry: Registry) {
    const registers = [registry];
    this.ended = new Counter({ name: "tenant_api_executions_finished_total", help: "Executions this process's runs ended, by state (the contract's AutomationExecutionState).", labelNames: ["state"], registers });
    this.lag = new Histogram({ name: "tenant_api_execution_lag_seconds", help: "Time from a webhook event's acceptance to the end of the execution it started (ended by this process).", buckets: LAG_BUCKETS, registers });
    this.resumes = new Counter({ name: "tenant_api_execution_retries_total", help: "Runs that resumed an execution whose earlier run began and did not finish (its instance died, or the database failed under it).", registers });
    this.parks = new Counter({ name: "tenant_api_executions_parked_total", help: "Runs of this process that parked their execution: a notification to try again later, or its destination at its cap of requests in flight.", registers });
    this.leasesLost = new Counter({ name: "tenant_api_execution_lease_expiries_total", help: "Runs of this process that stopped because their execution's lease had lapsed and passed to another run.", registers });
  }

  resumed(): void {
    this.resumes.inc();
  }

  finished(state: KnownAutomationExecutionState, lagMs: number): void {
    this.ended.inc({ state });
    this.lag.observe(Math.max(0, lagMs) / 1000);
  }

  parked(): void {
    this.parks.inc();
  }

  leaseLost(): void {
    this.leasesLost.inc();
  }

  /** Adds the gauges read when scraped. */
  watch(sources: ExecutionSources): void {
    const { storage, clock } = sources;
    // One read for both gauges, its queries one after the other: a scrape takes one connection at a time.
    const counted = new ThrottledRead(async () => ({ waiting: await countRunnable(storage.db, new Date(clock.now()).toISOString(), WAITING.cap), destinations: await sources.destinations() }), undefined);
    const waiting = async () => (await counted.value())?.waiting ?? Number.NaN;
    new Gauge({
      name: "tenant_api_notification_destinations",
      help: "Notification destinations that failed at least once, by state (NotificationDestinationState); the same on every instance; NaN when the database did not answer in time.",
      labelNames: ["state"],
      registers: [this.registry],
      async collect() {
        const counts = (await counted.value())?.destinations;
        for (const state of DESTINATION_STATES) this.set({ state }, counts ? (counts.find((c) => c.state === state)?.count ?? 0) : Number.NaN);
      },
    });
    new Gauge({
      name: "tenant_api_executions_waiting",
      help: `Executions runnable in the database and not running (pending, parked and due, or their run's lease lapsed), up to ${WAITING.cap}; the same on every instance; NaN when the database did not answer in time.`,
      registers: [this.registry],
      async collect() {
        this.set(await waiting());
      },
    });
    new Gauge({
      name: "tenant_api_executions_running",
      help: "Executions whose runs are under way in this process.",
      registers: [this.registry],
      collect() {
        this.set(sources.runs().length);
      },
    });
  }
}
