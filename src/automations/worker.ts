// Runs executions in this process. The intake hands it the executions it accepts, inserted already
// claimed by this worker (running, under a lease), while few are waiting: no claim query for them.
// Past that, they are inserted pending and claimed from the database, as are those left by a crash
// (an expired lease) or by another instance, found by polling. Also sweeps webhook event records
// past their retention.
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { Storage } from "../storage/connect.js";
import { claimExecutions } from "../storage/claims.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import type { WebhookEvents } from "../webhooks/for-automations.js";
import type { ExecutionRunner } from "./runner.js";

export interface WorkerOptions {
  /** How long a claimed run holds its execution before another worker may resume it. */
  leaseMs: number;
  pollMs: number;
  sweepMs: number;
  /** Runs in parallel in this process (on SQLite their writes share commits: see sqlite-group-commit.ts). */
  concurrency: number;
  /** Executions each of those claims at once (a claim is a write) and runs together. */
  claimBatch: number;
  /**
   * Executions handed over by the intake that may wait here, besides those whose transactions are
   * still committing: small, so that each runs long before its lease lapses.
   */
  handOff: number;
}

/**
 * Four runs of up to 32 executions each: a batch is one claim and one save (a statement each on
 * PostgreSQL, a share of one commit on SQLite) whatever its size, and each turn of a run waits for
 * its save to commit, which under load is a turn of the event loop serving many requests. With
 * batches of 8 the executions fell behind an intake at half its maximum on SQLite (accepted → done
 * p99 370-420 ms, bench scenario 1b); with 32 they keep up even at its maximum (about 20 ms).
 */
export const WORKER_DEFAULTS: WorkerOptions = { leaseMs: 60_000, pollMs: 1_000, sweepMs: 60_000, concurrency: 4, claimBatch: 32, handOff: 64 };

export class Worker {
  private timers: NodeJS.Timeout[] = [];
  private draining: Promise<void> | undefined;
  private again = false;
  private started = false;
  private stopped = false;
  private readonly handedOff: AutomationExecutionsTable[] = [];
  /**
   * Calls of `notify` so far, and their count before the last claim that found fewer executions
   * than it asked for: while the two differ, executions may be waiting in the database.
   */
  private notified = 0;
  private drainedAt = -1;

  constructor(
    private readonly deps: { storage: Storage; clock: Clock; runner: ExecutionRunner; events: WebhookEvents; logger: Logger },
    private readonly options: WorkerOptions = WORKER_DEFAULTS,
  ) {}

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
    this.handedOff.push(execution);
    this.wake();
  }

  /** Runs every runnable execution, now, the database's included; a call while running makes the loop go once more. */
  notify(): void {
    this.notified++;
    this.wake();
  }

  private wake(): void {
    if (this.stopped && this.handedOff.length === 0) return;
    if (this.draining) {
      this.again = true;
      return;
    }
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

  async sweep(): Promise<void> {
    try {
      const removed = await this.deps.events.sweep();
      if (removed > 0) this.deps.logger.info({ msg: "swept webhook event records", removed });
    } catch (err) {
      this.deps.logger.error({ msg: "webhook event sweep failed", err });
    }
  }

  private async drain(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.concurrency }, () => this.runUntilEmpty()));
  }

  private async runUntilEmpty(): Promise<void> {
    const { storage, clock, runner, logger } = this.deps;
    const { claimBatch } = this.options;
    // Turns alternate between what was handed over and what waits in the database, so that neither
    // starves the other under a steady load; a handed-over execution still runs long before its lease lapses.
    let handedOffFirst = true;
    // Once stopping, only what was handed over (already claimed by this worker) is still run.
    while (!this.stopped || this.handedOff.length > 0) {
      // On SQLite every await resolves at once: yield so that waiting requests are served between runs.
      await new Promise((resolve) => setImmediate(resolve));
      let claimed = handedOffFirst ? this.handedOff.splice(0, claimBatch) : [];
      if (claimed.length === 0 && this.notified !== this.drainedAt && !this.stopped) {
        const now = clock.now();
        const notifiedBefore = this.notified;
        try {
          claimed = await claimExecutions(storage, new Date(now).toISOString(), this.leaseFrom(now), claimBatch);
        } catch (err) {
          logger.error({ msg: "claiming executions failed", err });
          return;
        }
        if (claimed.length < claimBatch) this.drainedAt = notifiedBefore;
      }
      if (claimed.length === 0) claimed = this.handedOff.splice(0, claimBatch);
      if (claimed.length === 0) return;
      handedOffFirst = !handedOffFirst;
      // The batch's runs go together: each runs up to its first write in this turn, so their writes
      // share one commit on SQLite (one after another, each waited for the next turn's commit) and
      // one statement on PostgreSQL (storage/execution-results.ts).
      await Promise.all(claimed.map((execution) => runner.run(execution).catch((err: unknown) => logger.error({ msg: "execution run failed", executionId: execution.id, err }))));
    }
  }

  /** Stops polling and waits for the run in progress to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    await this.idle();
  }
}
