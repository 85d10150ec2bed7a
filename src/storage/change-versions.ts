// When a per-process cache may still be trusted, across every instance sharing the database. Each
// kind of cached state has a version row, bumped in the transaction of any change to it
// (`recordChange`); each instance polls it and moves its `generation` when it moves (at once for
// its own changes: `changedHere`), and a cache uses an entry only while it `trusts` the generation
// taken before the entry was read: never past `trustMs` after a change committed, even when polls
// fail. docs/operating.md, "PostgreSQL, and several instances".
import { BackgroundTask } from "../core/background-task.js";
import type { Logger } from "../core/logger.js";
import { BackgroundFailures } from "./background-failures.js";
import type { Storage } from "./connect.js";
import type { Db } from "./transactions.js";

export type ChangeKind = "principals" | "fund_policy" | "listeners" | "fund_triggers";

export interface PollTiming {
  pollMs: number;
  /** How long after a successful poll started what it saw is trusted; at most 1 s, the bound. */
  trustMs: number;
}

/** Trusted for three polls: one late or failed poll does not empty the caches. */
export const CHANGE_POLL: PollTiming = { pollMs: 250, trustMs: 750 };

/** Bumps the version of `kind`; call it inside the transaction of the change. */
export async function recordChange(db: Db, kind: ChangeKind): Promise<void> {
  await db
    .updateTable("change_versions")
    .set((eb) => ({ version: eb("version", "+", 1) as never }))
    .where("name", "=", kind)
    .execute();
}

export class ChangeWatch {
  private current = 0;
  private version: string | undefined;
  /** Monotonic (performance.now), not the injected clock: the polls run on real timers. */
  private trustedUntil = 0;
  private readonly polls: BackgroundTask;
  /** While polls fail the caches are bypassed: the log says so once per run of failures, not every poll. */
  private readonly failures: BackgroundFailures;

  constructor(
    private readonly storage: Storage,
    private readonly kind: ChangeKind,
    logger: Logger,
    private readonly timing: PollTiming = CHANGE_POLL,
  ) {
    this.polls = new BackgroundTask(timing.pollMs, () => this.poll());
    this.failures = new BackgroundFailures(logger, "change poll", { kind });
  }

  /** Take it before reading the state to be cached, and keep it with what was read. */
  get generation(): number {
    return this.current;
  }

  /** Whether state read at `generation` may be used now. */
  trusts(generation: number): boolean {
    return generation === this.current && performance.now() < this.trustedUntil;
  }

  /** After a change made by this process has committed: its effect is seen by the next request. */
  changedHere(): void {
    this.current++;
  }

  /** Polls once, then in the background until `stop`. */
  /** A watch started: polled once, then in the background. */
  static async started(storage: Storage, kind: ChangeKind, logger: Logger, timing?: PollTiming): Promise<ChangeWatch> {
    const watch = new ChangeWatch(storage, kind, logger, timing);
    await watch.start();
    return watch;
  }

  private async start(): Promise<void> {
    await this.poll();
    this.polls.start();
  }

  stop(): Promise<void> {
    return this.polls.stop();
  }

  private async poll(): Promise<void> {
    const startedAt = performance.now();
    try {
      const row = await this.storage.db.selectFrom("change_versions").select("version").where("name", "=", this.kind).executeTakeFirst();
      const version = String(row?.version);
      if (version !== this.version) {
        this.version = version;
        this.current++;
      }
      this.trustedUntil = startedAt + this.timing.trustMs;
      this.failures.succeeded();
    } catch (err) {
      this.failures.failed(err, { caches: "bypassed until a poll succeeds" });
    }
  }
}
