// Runs pending executions in this process: woken right after the intake commits one, and polling
// so that work left by a crash (an expired lease) or another instance is picked up. Also sweeps
// webhook event records past their retention.
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { Storage } from "../storage/connect.js";
import { claimExecutions } from "../storage/claims.js";
import type { WebhookEvents } from "../webhooks/events.js";
import type { ExecutionRunner } from "./runner.js";

export interface WorkerOptions {
  /** How long a claimed run holds its execution before another worker may resume it. */
  leaseMs: number;
  pollMs: number;
  sweepMs: number;
  /** Runs in parallel in this process (on SQLite their writes share commits: see sqlite-group-commit.ts). */
  concurrency: number;
  /** Executions each of those claims at once and runs one after another: a claim is a write. */
  claimBatch: number;
}

export const WORKER_DEFAULTS: WorkerOptions = { leaseMs: 60_000, pollMs: 1_000, sweepMs: 60_000, concurrency: 1, claimBatch: 8 };

export class Worker {
  private timers: NodeJS.Timeout[] = [];
  private draining: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly deps: { storage: Storage; clock: Clock; runner: ExecutionRunner; events: WebhookEvents; logger: Logger },
    private readonly options: WorkerOptions = WORKER_DEFAULTS,
  ) {}

  start(): void {
    this.timers.push(setInterval(() => this.notify(), this.options.pollMs).unref());
    this.timers.push(setInterval(() => void this.sweep(), this.options.sweepMs).unref());
    this.notify();
  }

  /** Runs every runnable execution, now; a call while running makes the loop go once more. */
  notify(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.again) {
        this.again = false;
        this.notify();
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
    while (!this.stopped) {
      // On SQLite every await resolves at once: yield so that waiting requests are served between runs.
      await new Promise((resolve) => setImmediate(resolve));
      const now = clock.now();
      let claimed;
      try {
        claimed = await claimExecutions(storage, new Date(now).toISOString(), new Date(now + this.options.leaseMs).toISOString(), this.options.claimBatch);
      } catch (err) {
        logger.error({ msg: "claiming executions failed", err });
        return;
      }
      if (claimed.length === 0) return;
      for (const execution of claimed) {
        await runner.run(execution).catch((err: unknown) => logger.error({ msg: "execution run failed", executionId: execution.id, err }));
      }
    }
  }

  /** Stops polling and waits for the run in progress to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    await this.idle();
  }
}
