// A table someone holds locked (an administrator's LOCK TABLE, a long migration) degrades only the
// operations that need it. Their requests wait at most lock_timeout each, holding a pool connection
// meanwhile, and would fill the pool; so once a request lost to lock_timeout while others waited for a
// connection, its operation is shed (503 at once, Retry-After lock_timeout), then probed by one
// request until it runs again. A hot row under contention sheds nothing. docs/operating.md, "A locked
// table".
import { DATABASE_DEFAULTS, type Config } from "../config.js";
import type { Logger } from "../core/logger.js";
import type { Storage } from "../storage/connect.js";

/** The cause a request that lost to lock_timeout fails with (../storage/unavailable.ts). */
export const LOCK_TIMEOUT = "sqlstate 55P03";

export interface LockSheddingOptions {
  /** How long an operation is shed before its probe: lock_timeout itself. */
  holdMs: number;
  /** Whether requests are waiting for a connection of the pool now. */
  poolShort: () => boolean;
  logger: Logger;
  now?: () => number;
}

/** What happens to a request of an operation (`probe`: it runs, and its end decides whether the operation is shed again). */
export type Admission = "run" | "probe" | "shed";

interface Shed {
  /** Until when (options.now) no request of the operation runs. */
  until: number;
  probing: boolean;
}

export class LockShedding {
  /** The operations shed now: one entry per operation of the contract at most. */
  private readonly shed = new Map<string, Shed>();
  private readonly now: () => number;

  constructor(private readonly options: LockSheddingOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  admit(operation: string): Admission {
    const shed = this.shed.get(operation);
    if (!shed) return "run";
    if (shed.probing || shed.until > this.now()) return "shed";
    shed.probing = true;
    return "probe";
  }

  /**
   * A request of `operation` ended, lost to lock_timeout or not. A probe decides; another request
   * sheds its operation when it lost while the pool was short (one warning per episode).
   */
  ended(operation: string, lostToLock: boolean, probe: boolean): void {
    if (!lostToLock) {
      if (probe && this.shed.delete(operation)) this.options.logger.warn({ msg: "requests run again: the table their operation needs is free", operation });
      return;
    }
    if (!probe && (this.shed.has(operation) || !this.options.poolShort())) return;
    if (!probe) this.options.logger.warn({ msg: "requests shed: a table their operation needs is locked, and their waits held the connections of others", operation });
    this.shed.set(operation, { until: this.now() + this.options.holdMs, probing: false });
  }

  /** Seconds a shed request is told to wait. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.options.holdMs / 1000));
  }
}

/** PostgreSQL with a lock_timeout sheds the operations whose table is locked while their waits starve the pool; otherwise nothing is shed. */
export function lockSheddingFor(database: Config["database"], storage: Storage, logger: Logger): LockShedding | undefined {
  if (database.kind !== "postgres") return undefined;
  const holdMs = database.lockTimeoutMs ?? DATABASE_DEFAULTS.lockTimeoutMs;
  return holdMs > 0 ? new LockShedding({ holdMs, poolShort: () => (storage.poolCounts?.().waiting ?? 0) > 0, logger }) : undefined;
}
