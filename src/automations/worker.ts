// Runs executions in this process: those the intake hands it, inserted already claimed (no claim
// query for them) while few are waiting, and those claimed from the database by polling (pending,
// left by a crash, or by another instance). Also sweeps webhook event records past their retention.
// Stopping, it finishes the runs under way and releases what it has not begun. After a fault of the
// database it recovers by itself, or says it is `stuck` (readiness answers 503). docs/operating.md,
// "Database faults and readiness", "Shutdown".
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { Origin } from "../core/origin.js";
import { startSpan, tracingOn, withLogIds, type Span } from "../core/spans.js";
import type { Storage } from "../storage/connect.js";
import { claimExecutions, endLeases, releaseExecutions, turnAfter } from "./execution-claims.js";
import { LeaseLost } from "./execution-results.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import { BackgroundFailures } from "../storage/background-failures.js";
import { databaseUnavailable } from "../storage/unavailable.js";
import type { WebhookEvents } from "../webhooks/for-automations.js";
import { interrupted, type ExecutionRunner } from "./runner.js";

export interface WorkerOptions {
  /** How long a claimed run holds its execution before another worker may resume it. */
  leaseMs: number;
  pollMs: number;
  sweepMs: number;
  /** Runs under way in this process at most (on SQLite their writes share commits: see sqlite-group-commit.ts). */
  maxRuns: number;
  /** Executions one claim takes at most (a claim is a write). */
  claimBatch: number;
  /**
   * Executions handed over by the intake that may wait here, besides those whose transactions are
   * still committing: small, so that each runs long before its lease lapses.
   */
  handOff: number;
  /** How long the worker may go without progress (a claim answered, a run ended) while runs are due before it counts as stuck. */
  stuckMs: number;
}

/**
 * 128 runs at once, claimed 32 at most at a time: a claim is one statement (a share of one commit on
 * SQLite) whatever its size, and the runs claimed together make their first writes together (one
 * commit on SQLite, one statement on PostgreSQL): smaller claims fell behind the intake
 * (docs/benchmarks.md, "What the profiles led to"). Each run frees its slot when it ends or parks,
 * whatever the others claimed with it do. A poll every 500 ms: what an instance that stops releases
 * runs elsewhere within a second.
 */
export const WORKER_DEFAULTS: WorkerOptions = { leaseMs: 60_000, pollMs: 500, sweepMs: 60_000, maxRuns: 128, claimBatch: 32, handOff: 64, stuckMs: 60_000 };

/** The span of an execution's run. */
export const EXECUTION_SPAN = "automation.execution";

/** Leases ended per statement at most. */
const END_LEASES_BATCH = 100;

export class Worker {
  private timers: NodeJS.Timeout[] = [];
  private draining: Promise<void> | undefined;
  private again = false;
  private started = false;
  private stopped = false;
  private readonly handedOff: AutomationExecutionsTable[] = [];
  /** The executions of the runs under way. */
  private readonly running = new Set<string>();
  /** Ends the loop's wait for a slot or for work: called when a run ends and when the worker is woken. */
  private poke: (() => void) | undefined;
  /** The automation whose pending executions the last claim took last: the next claim's turn begins after it. */
  private turn = "";
  /** Releases not yet committed: `stop` waits for them. */
  private readonly releasing = new Set<Promise<void>>();
  /**
   * Calls of `notify` so far, and their count before the last claim that found fewer executions
   * than it asked for: while the two differ, executions may be waiting in the database.
   */
  private notified = 0;
  private drainedAt = -1;
  /** Runs the database failed under, by execution id: the leases to end once it answers. */
  private readonly leasesToEnd = new Map<string, string>();
  /** When a claim last answered or a run last ended (performance.now(): real time, not the injected clock). */
  private progressAt = performance.now();
  private claimFailing = false;
  /** The cause while executions are paused by the database, for one warning per outage. */
  private pausedBy: string | undefined;
  private readonly sweepFailures: BackgroundFailures;
  private readonly releaseFailures: BackgroundFailures;

  constructor(
    private readonly deps: { storage: Storage; clock: Clock; runner: ExecutionRunner; events: WebhookEvents; logger: Logger },
    private readonly options: WorkerOptions = WORKER_DEFAULTS,
  ) {
    this.sweepFailures = new BackgroundFailures(deps.logger, "webhook event sweep");
    this.releaseFailures = new BackgroundFailures(deps.logger, "releasing executions");
  }

  start(): void {
    this.started = true;
    this.timers.push(setInterval(() => this.notify(), this.options.pollMs).unref());
    this.timers.push(setInterval(() => void this.sweep(), this.options.sweepMs).unref());
    this.notify();
  }

  /** Until when a run claimed at `now` holds its execution. */
  private leaseFrom(now: number): string {
    return new Date(now + this.options.leaseMs).toISOString();
  }

  directLease(): string | undefined {
    if (!this.started || this.stopped || this.handedOff.length >= this.options.handOff) return undefined;
    return this.leaseFrom(this.deps.clock.now());
  }

  take(execution: AutomationExecutionsTable): void {
    // Leased just before the stop, recorded just after it.
    if (this.stopped) {
      void this.release([execution]);
      return;
    }
    this.handedOff.push(execution);
    this.wake();
  }

  /**
   * An execution leased by `directLease` whose record failed: it may have committed nonetheless
   * (its answer lost), leased to this worker, which will not be handed it; its lease is ended once
   * the database answers.
   */
  notRecorded(execution: AutomationExecutionsTable): void {
    this.endLeaseLater(execution);
  }

  /**
   * Keeps `execution`'s lease to end once the database answers. The leases already lapsed are
   * dropped first: the next claim takes them as they are. So an outage, while the intake goes on
   * leasing, keeps one lease's length of them at most; they were added in lease order, so the
   * lapsed ones come first.
   */
  private endLeaseLater(execution: AutomationExecutionsTable): void {
    const now = new Date(this.deps.clock.now()).toISOString();
    for (const [id, lease] of this.leasesToEnd) {
      if (lease > now) break;
      this.leasesToEnd.delete(id);
    }
    if (execution.lease_until && execution.lease_until > now) this.leasesToEnd.set(execution.id, execution.lease_until);
  }

  /** Runs are due and none has progressed (a claim answered, a run ended) for `stuckMs`. */
  stuck(): boolean {
    return this.stalledMs() > this.options.stuckMs;
  }

  /** How long runs have been due without progress (a claim answered, a run ended); 0 while none is due. */
  stalledMs(): number {
    if (!this.started || this.stopped) return 0;
    const due = this.draining !== undefined || this.handedOff.length > 0 || this.leasesToEnd.size > 0 || this.claimFailing;
    return due ? performance.now() - this.progressAt : 0;
  }

  /** Runs every runnable execution, now, the database's included; a call while running makes the loop go once more. */
  notify(): void {
    this.notified++;
    this.wake();
  }

  private wake(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      this.poked();
      return;
    }
    // The intake's request that hands an execution over may set the loop going: it belongs to no
    // request's trace all the same (each run continues its own execution's trace: `run`).
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  /** Resolves when no run is in progress (tests wait on it). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  sweep(): Promise<void> {
    return this.sweepFailures.attempt(
      () => this.deps.events.sweep(),
      (removed) => void (removed > 0 && this.deps.logger.info({ msg: "swept webhook event records", removed })),
    );
  }

  private poked(): void {
    const poke = this.poke;
    this.poke = undefined;
    poke?.();
  }

  /**
   * Starts runs while slots are free and executions are runnable, then waits for a run to end or for
   * the worker to be woken, and again, until no run is under way and nothing is left to start.
   */
  private async drain(): Promise<void> {
    // Only when there are: otherwise the runs start in this turn, as they always have.
    if (this.leasesToEnd.size > 0 && !(await this.endInterruptedLeases())) return;
    // Turns alternate between what was handed over and what waits in the database, so that neither
    // starves the other under a steady load; a handed-over execution still runs long before its lease lapses.
    let handedOffFirst = true;
    for (;;) {
      // Once stopping, no run begins: `stop` releases what was handed over.
      while (!this.stopped && this.running.size < this.options.maxRuns) {
        // On SQLite every await resolves at once: yield so that waiting requests are served between claims.
        await new Promise((resolve) => setImmediate(resolve));
        if (this.stopped) break;
        const claimed = await this.next(Math.min(this.options.claimBatch, this.options.maxRuns - this.running.size), handedOffFirst);
        if (claimed.length === 0) break;
        // Claimed while the stop began.
        if (this.stopped) {
          void this.release(claimed);
          break;
        }
        handedOffFirst = !handedOffFirst;
        // Each runs up to its first write in this turn: their writes share one commit on SQLite and
        // one statement on PostgreSQL (execution-results.ts).
        for (const execution of claimed) this.begin(execution);
      }
      if (this.running.size === 0) return;
      await new Promise<void>((resolve) => (this.poke = resolve));
    }
  }

  /** Up to `room` executions to run: handed over, or claimed in the database while it may hold some; none when the claim failed. */
  private async next(room: number, handedOffFirst: boolean): Promise<AutomationExecutionsTable[]> {
    const { storage, clock } = this.deps;
    const handedOff = handedOffFirst ? this.handedOff.splice(0, room) : [];
    if (handedOff.length > 0 || this.notified === this.drainedAt) return handedOff.length > 0 ? handedOff : this.handedOff.splice(0, room);
    const now = clock.now();
    const notifiedBefore = this.notified;
    let claimed: AutomationExecutionsTable[];
    try {
      claimed = await claimExecutions(storage, new Date(now).toISOString(), this.leaseFrom(now), room, this.turn);
    } catch (err) {
      // Only claims the database cannot answer for now count towards `stuck`. A claim failing
      // for a fault of ours (a schema changed under this release mid-deploy) fails on every
      // instance alike: taking them all out of service together would run no more executions.
      this.claimFailing = this.failed("claiming executions failed", err);
      return [];
    }
    this.claimFailing = false;
    this.progressed();
    this.turn = turnAfter(claimed, this.turn);
    if (claimed.length < room) this.drainedAt = notifiedBefore;
    return claimed.length > 0 ? claimed : this.handedOff.splice(0, room);
  }

  /** Runs `execution` in a slot of its own, freed when its run ends (or parks). */
  private begin(execution: AutomationExecutionsTable): void {
    this.running.add(execution.id);
    void this.run(execution).finally(() => {
      this.running.delete(execution.id);
      this.poked();
    });
  }

  /** Ends the leases of the interrupted runs, so that they are claimed again now; false while the database fails. */
  private async endInterruptedLeases(): Promise<boolean> {
    while (this.leasesToEnd.size > 0) {
      const leases = [...this.leasesToEnd].slice(0, END_LEASES_BATCH).map(([id, lease]) => ({ id, lease }));
      try {
        // Ended a moment ago: lapsed for the next claim, whatever the clock says then.
        const ended = await endLeases(this.deps.storage, leases, new Date(this.deps.clock.now() - 1).toISOString());
        if (ended > 0) this.deps.logger.info({ msg: "leases of interrupted executions ended: claimed again now", executions: ended });
      } catch (err) {
        this.failed("ending the leases of interrupted executions failed", err);
        return false;
      }
      for (const { id } of leases) this.leasesToEnd.delete(id);
    }
    return true;
  }

  private progressed(): void {
    this.progressAt = performance.now();
    if (this.pausedBy === undefined) return;
    this.pausedBy = undefined;
    this.deps.logger.warn({ msg: "executions resumed: the database answers again" });
  }

  /**
   * Logs `err`: the database unavailable once per outage, as a warning naming the cause only; anything
   * else as an error. Answers whether it was the database's being unavailable for now (it pauses the executions).
   */
  private failed(msg: string, err: unknown): boolean {
    const cause = databaseUnavailable(err);
    if (cause === undefined) {
      this.deps.logger.error({ msg, err });
      return false;
    }
    if (this.pausedBy === undefined) this.deps.logger.warn({ msg: "executions paused: database unavailable", cause });
    this.pausedBy = cause;
    return true;
  }

  /**
   * Runs `execution` in a span of its own, a child of the request that accepted its event (its
   * stored trace context; a new trace without one): the run is that request's work, deferred, and
   * the parent-based samplers keep or drop both together, whichever instance runs it. The span is
   * the Origin of the run's changes (their transactions are its children) and its log lines carry it.
   */
  private run(execution: AutomationExecutionsTable): Promise<void> {
    if (!tracingOn()) return this.attempt(execution, undefined);
    const options = { kind: "consumer" as const, continues: { traceparent: execution.trace_parent }, attributes: { "automation.execution.attempt": execution.attempts } };
    const span = startSpan(EXECUTION_SPAN, options);
    if (!span) return this.attempt(execution, undefined);
    return this.attempt(execution, span).finally(() => span.end());
  }

  private async attempt(execution: AutomationExecutionsTable, span: Span | undefined): Promise<void> {
    const actor = { kind: "execution", automationId: execution.automation_id, executionId: execution.id, eventId: execution.event_id ?? "" } as const;
    const origin: Origin = { actor, span };
    try {
      await this.deps.runner.run(execution, origin);
    } catch (err) {
      if (err instanceof LeaseLost) {
        span?.fail("its lease passed to another run");
        this.deps.logger.warn(withLogIds({ msg: "execution run stopped: its lease passed to another run", executionId: execution.id }, span));
      } else if (interrupted(err)) {
        span?.fail("database unavailable");
        this.endLeaseLater(execution);
        this.failed("execution run failed", err);
        return;
      } else {
        span?.fail("run failed");
        this.deps.logger.error(withLogIds({ msg: "execution run failed", executionId: execution.id, err }, span));
      }
    }
    this.progressed();
  }

  /** Gives back executions this worker holds and will not run; a failure leaves them to their lease. */
  private release(held: AutomationExecutionsTable[]): Promise<void> {
    const done = releaseExecutions(this.deps.storage, held).then(
      () => void (held.length > 0 && this.deps.logger.info({ msg: "released executions", executionIds: held.map((e) => e.id) })),
      (err: unknown) => this.releaseFailures.failed(err, { executionIds: held.map((e) => e.id), resumed: "when their lease lapses" }),
    );
    this.releasing.add(done);
    return done.finally(() => this.releasing.delete(done));
  }

  /** The executions whose runs are under way (the log names them if a shutdown cuts them). */
  runs(): string[] {
    return [...this.running];
  }

  /**
   * Stops polling and claiming, releases what was handed over and not begun, and waits for the runs
   * under way to finish and for the releases to commit. Again later: waits for the releases of
   * executions handed over since (their records committed after the stop).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    void this.release(this.handedOff.splice(0));
    while (this.draining || this.releasing.size > 0) await Promise.all([this.draining, ...this.releasing]);
    // The runs the database failed under go to another instance now, not when their leases lapse (best effort: failing, they lapse).
    if (this.leasesToEnd.size > 0) await this.endInterruptedLeases();
  }
}
