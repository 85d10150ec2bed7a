// How a task that runs again and again in the background (a poll, a heartbeat, a sweep) logs its
// failures: once per run of failures, the run ending at its next success, so an outage is a few
// lines and not one a second. The database unavailable for the moment (unavailable.ts) is a warning
// naming the cause's label, never the error's text or stack, which may name the database's address
// or user; any other failure is an error with its stack. docs/operating.md, "Database faults and
// readiness".
import { BackgroundTask } from "../core/background-task.js";
import type { Logger } from "../core/logger.js";
import { databaseUnavailable } from "./unavailable.js";

export class BackgroundFailures {
  private logged = { unavailable: false, fault: false };

  /** `task` names it in the log ("change poll", "instance heartbeat"...); `fields` go with each line (e.g. which poll). */
  constructor(
    private readonly logger: Logger,
    private readonly task: string,
    private readonly fields: Record<string, unknown> = {},
  ) {}

  /** A run failed on `err`; `fields`: what the line says of its consequence. */
  failed(err: unknown, fields: Record<string, unknown> = {}): void {
    const cause = databaseUnavailable(err);
    if (cause !== undefined) {
      if (!this.logged.unavailable) this.logger.warn({ msg: `${this.task} failed: database unavailable`, ...this.fields, ...fields, cause });
      this.logged.unavailable = true;
    } else {
      if (!this.logged.fault) this.logger.error({ msg: `${this.task} failed`, ...this.fields, ...fields, err });
      this.logged.fault = true;
    }
  }

  /** A run succeeded: ends a run of failures, saying so when it was logged. */
  succeeded(): void {
    if (!this.logged.unavailable && !this.logged.fault) return;
    this.logged = { unavailable: false, fault: false };
    this.logger.info({ msg: `${this.task} succeeded again`, ...this.fields });
  }

  /** Runs `run` once: `then` is given what it answers, or its failure is logged. */
  async attempt<T>(run: () => Promise<T>, then: (result: T) => void): Promise<void> {
    let result: T;
    try {
      result = await run();
    } catch (err) {
      this.failed(err);
      return;
    }
    this.succeeded();
    then(result);
  }
}

/** A task started to run every `intervalMs`, its failures logged once per run of them; `then` is given each success's result. */
export function repeatedTask<T>(logger: Logger, intervalMs: number, task: string, run: () => Promise<T>, then: (result: T) => void): BackgroundTask {
  const failures = new BackgroundFailures(logger, task);
  const repeated = new BackgroundTask(intervalMs, () => failures.attempt(run, then));
  repeated.start();
  return repeated;
}

/** A sweep started to run every `intervalMs`: `sweep` answers the rows it removed, logged as `swept` when there were any. */
export const repeatedSweep = (logger: Logger, intervalMs: number, task: string, sweep: () => Promise<number>, swept: string): BackgroundTask =>
  repeatedTask(logger, intervalMs, task, sweep, (removed) => void (removed > 0 && logger.info({ msg: swept, removed })));
