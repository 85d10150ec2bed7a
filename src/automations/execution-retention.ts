// Bounded storage of executions: every instance sweeps, in the background, the finished executions
// past EXECUTION_RETENTION_DAYS and, with EXECUTION_RETENTION_COUNT, those of each automation past
// its newest N; never one pending or running, nor an automation's newest. A sweep goes in small
// batches with a pause after each, so it never holds the database (on SQLite, the process) for
// long. docs/operating.md, "Storage and retention".
import { BackgroundTask } from "../core/background-task.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import { BackgroundFailures } from "../storage/background-failures.js";
import type { Storage } from "../storage/connect.js";
import { automationIdsAfter, finishedCut, pruneFinishedBefore, pruneFinishedThrough } from "./execution-pruning.js";

const DAY_MS = 24 * 3_600_000;

/** What is kept (EXECUTION_RETENTION_DAYS, EXECUTION_RETENTION_COUNT). */
export interface RetentionPolicy {
  /** Days a finished execution is kept after it finished. */
  days: number;
  /** The finished executions kept per automation at most, newest first; null: no bound. */
  count: number | null;
}

/** How a sweep goes. */
export interface RetentionPace {
  /** Between the starts of two sweeps (EXECUTION_RETENTION_SWEEP_SECONDS). */
  intervalMs: number;
  /** Executions a batch (one DELETE) removes at most. */
  batchRows: number;
  /** The pause after a batch, as a multiple of the time the batch took: the sweep's share of the database's time is at most 1 / (1 + this). */
  pauseFactor: number;
  /** The pause after a batch at least, in milliseconds. */
  minPauseMs: number;
  /** Batches per sweep at most: a sweep ends, and logs what it removed, even while a backlog remains. */
  maxBatches: number;
}

/**
 * Batches of 500 (about 1.1 MB of small executions), each followed by a pause of 19 times its own
 * length and 20 ms at least: a sweep takes at most a twentieth of the time of the database
 * connection it uses, and less the busier the database is (a batch takes longer). A sweep of 2,000
 * batches removes up to a million. How fast that catches up with a backlog, and at what cost to the
 * intake: docs/operating.md, "Storage and retention".
 */
export const RETENTION_PACE: Omit<RetentionPace, "intervalMs"> = { batchRows: 500, pauseFactor: 19, minPauseMs: 20, maxBatches: 2_000 };

/** Automations read per page while the count is kept. */
const AUTOMATIONS_PAGE = 500;

export interface SweepResult {
  /** Removed as past the retention days. */
  byAge: number;
  /** Removed as past an automation's newest EXECUTION_RETENTION_COUNT. */
  byCount: number;
}

export class ExecutionRetention {
  private readonly task: BackgroundTask;
  private stopped = false;
  /** Ends the pause under way at once: a stop does not wait out a pause that a slow batch made long. */
  private endPause: (() => void) | undefined;
  /** The last automation whose count a sweep kept: the next sweep's count goes on after it ("": from the first). */
  private countedThrough = "";
  private readonly failures: BackgroundFailures;

  constructor(
    private readonly deps: { storage: Storage; clock: Clock; logger: Logger },
    private readonly policy: RetentionPolicy,
    private readonly pace: RetentionPace,
  ) {
    this.task = new BackgroundTask(pace.intervalMs, () => this.sweepAndLog());
    this.failures = new BackgroundFailures(deps.logger, "automation execution sweep");
  }

  start(): void {
    this.task.start();
  }

  /** Sweeps now, as its timer would (the sandbox's clock moved past a cutoff). */
  runNow(): Promise<void> {
    return this.task.runNow();
  }

  /** Stops sweeping: a sweep under way ends after its current batch. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.endPause?.();
    await this.task.stop();
  }

  /** Until when, by the clock, finished executions are past the retention. */
  private cutoff(): string {
    return new Date(this.deps.clock.now() - this.policy.days * DAY_MS).toISOString();
  }

  /** One sweep: what is past the retention, then past each automation's count; answers what it removed. */
  async sweep(): Promise<SweepResult> {
    const batches = { left: this.pace.maxBatches };
    const before = this.cutoff();
    const byAge = await this.inBatches(batches, (limit) => pruneFinishedBefore(this.deps.storage, before, limit));
    const byCount = this.policy.count === null ? 0 : await this.keepCount(this.policy.count, batches);
    return { byAge, byCount };
  }

  /**
   * Every automation's finished executions past its `keep` newest. Reading an automation's cut
   * counts against the sweep's batches as a DELETE does, so a sweep's work is bounded however many
   * automations there are; the next sweep goes on from the automation this one stopped before.
   */
  private async keepCount(keep: number, batches: { left: number }): Promise<number> {
    const { storage } = this.deps;
    let removed = 0;
    for (;;) {
      const ids = await automationIdsAfter(storage, this.countedThrough, AUTOMATIONS_PAGE);
      for (const id of ids) {
        if (this.stopped || batches.left <= 0) return removed;
        batches.left--;
        // On SQLite every await resolves at once: let waiting requests be served between automations.
        await new Promise((resolve) => setImmediate(resolve));
        const cut = await finishedCut(storage, id, keep);
        if (cut) removed += await this.inBatches(batches, (limit) => pruneFinishedThrough(storage, id, cut, limit));
        // Passed, done or not: what is left of it waits for the next round, and every sweep gets on.
        this.countedThrough = id;
      }
      if (ids.length < AUTOMATIONS_PAGE) {
        this.countedThrough = "";
        return removed;
      }
    }
  }

  /** Runs `batch` until it removes fewer than a batch, the sweep's batches run out, or the retention stops; answers how many it removed. */
  private async inBatches(batches: { left: number }, batch: (limit: number) => Promise<number>): Promise<number> {
    const { batchRows, pauseFactor, minPauseMs } = this.pace;
    let removed = 0;
    while (!this.stopped && batches.left > 0) {
      batches.left--;
      const started = performance.now();
      const n = await batch(batchRows);
      removed += n;
      if (n < batchRows) break;
      // Real time, not the clock's: the pause leaves the database its time.
      const pauseMs = Math.max(minPauseMs, (performance.now() - started) * pauseFactor);
      await this.pause(pauseMs);
    }
    return removed;
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endPause?.(), ms);
      this.endPause = () => {
        clearTimeout(timer);
        this.endPause = undefined;
        resolve();
      };
    });
  }

  private sweepAndLog(): Promise<void> {
    return this.failures.attempt(
      () => this.sweep(),
      ({ byAge, byCount }) => void (byAge + byCount > 0 && this.deps.logger.info({ msg: "swept automation executions", removed: byAge + byCount, byAge, byCount })),
    );
  }
}
