// Whether this instance reaches its database, for readiness and for the log: a `select 1` every
// second in the background and on each readiness check (joining one under way), each bounded in
// time, so a database gone silent is seen within that bound rather than the query timeout. Each
// change is logged once, as a warning naming the cause's label (never the error's text); how long
// since the database last answered is kept for an alert on an outage's length. docs/operating.md,
// "Database faults and readiness".
import { sql } from "kysely";
import { DATABASE_DEFAULTS, type Config } from "../config.js";
import { BackgroundTask } from "../core/background-task.js";
import type { Logger } from "../core/logger.js";
import type { Storage } from "./connect.js";
import { databaseUnavailable } from "./unavailable.js";

export interface PingTiming {
  intervalMs: number;
  /** How long a ping may take, the wait for a connection included, before the database counts as unreachable. */
  timeoutMs: number;
}

const TIMED_OUT = new Error("ping timed out");

/**
 * A ping every second, its `select 1` given milliseconds once it has a connection: the database
 * answers it that fast when it answers at all (on PostgreSQL the wait for a connection, up to
 * DATABASE_POOL_TIMEOUT_MS, comes on top).
 */
const DATABASE_PING: PingTiming = { intervalMs: 1_000, timeoutMs: 2_000 };

/** The timing of a server's pings of the database `database` configures. */
export function pingTiming(database: Config["database"]): PingTiming {
  const poolWaitMs = database.kind === "postgres" ? (database.poolTimeoutMs ?? DATABASE_DEFAULTS.poolTimeoutMs) : 0;
  return { ...DATABASE_PING, timeoutMs: DATABASE_PING.timeoutMs + poolWaitMs };
}

export class DatabaseReachability {
  private reachable = true;
  /** Since when (performance.now()) the database has not answered. */
  private unreachableSince = 0;
  /** When (performance.now()) the database last answered a ping: it had answered the start's queries. */
  private answeredAt = performance.now();
  private pinging: Promise<boolean> | undefined;
  private readonly pings: BackgroundTask;

  constructor(
    private readonly storage: Storage,
    private readonly logger: Logger,
    private readonly timing: PingTiming,
  ) {
    this.pings = new BackgroundTask(timing.intervalMs, async () => void (await this.check()));
  }

  start(): void {
    this.pings.start();
  }

  stop(): Promise<void> {
    return this.pings.stop();
  }

  /** What the last ping found (reachable before the first), without pinging: for what asks often (the metrics). */
  reachableAtLastPing(): boolean {
    return this.reachable;
  }

  /** How long since the database last answered a ping, in ms: under about a second while it answers. */
  unansweredMs(): number {
    return performance.now() - this.answeredAt;
  }

  /** Pings now, or joins the ping under way: whether the database answered in time. */
  check(): Promise<boolean> {
    return (this.pinging ??= this.ping().finally(() => (this.pinging = undefined)));
  }

  private async ping(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(TIMED_OUT), this.timing.timeoutMs)));
    try {
      // PostgreSQL: on the probe's own connection, which a pool full of waiters cannot starve; a
      // ping that loses the race drops it, and the next opens another.
      const { probe } = this.storage;
      await Promise.race([probe ? probe.ping() : sql`select 1`.execute(this.storage.db), deadline]).catch((e: unknown) => {
        if (e === TIMED_OUT) probe?.drop();
        throw e;
      });
      this.answered();
      return true;
    } catch (err) {
      this.failed(err === TIMED_OUT ? "ping-timeout" : (databaseUnavailable(err) ?? "error"));
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private answered(): void {
    this.answeredAt = performance.now();
    if (this.reachable) return;
    this.reachable = true;
    this.logger.warn({ msg: "database reachable again", unreachableMs: Math.round(performance.now() - this.unreachableSince) });
  }

  private failed(cause: string): void {
    if (!this.reachable) return;
    this.reachable = false;
    this.unreachableSince = performance.now();
    this.logger.warn({ msg: "database unreachable", cause });
  }
}
