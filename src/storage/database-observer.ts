// What the storage layer reports as it works, for the metrics (src/metrics/database-metrics.ts),
// which it never imports: an observer given to openStorage, absent unless metrics are on.
import { databaseUnavailable } from "./unavailable.js";

export interface DatabaseObserver {
  /** A transaction (or a write of one statement) failed on an error of the database: `cause` labels it (`failureCause`). */
  transactionFailed(cause: string): void;
  /** PostgreSQL: a statement the database cancelled past statement_timeout, or a query left unanswered past the query timeout. */
  timedOut(timeout: "statement" | "query"): void;
  /** SQLite: how long a write transaction's BEGIN IMMEDIATE waited for the database's write lock, in seconds. */
  waitedForWriteLock(seconds: number): void;
}

/** The connections of a PostgreSQL pool: open (idle or in use), idle, the queries waiting for one, and its size. */
export interface PoolCounts {
  open: number;
  idle: number;
  waiting: number;
  max: number;
}

/**
 * A bounded label for a failure of the database: the unavailability's (`sqlstate 57014`,
 * `pool-timeout`, `SQLITE_BUSY`...), else the database's own code (`sqlstate 23505`, `SQLITE_FULL`);
 * undefined for what the database did not fail on (a transaction's body refusing the request).
 */
export function failureCause(error: unknown): string | undefined {
  const unavailable = databaseUnavailable(error);
  if (unavailable !== undefined) return unavailable;
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== "string") return undefined;
  if (/^[0-9A-Z]{5}$/.test(code)) return `sqlstate ${code}`;
  return /^SQLITE_[A-Z_]+$/.test(code) ? code : undefined;
}

/** Which timeout a failed statement met, if one. */
export function timeoutOf(error: unknown): "statement" | "query" | undefined {
  const label = databaseUnavailable(error);
  return label === "sqlstate 57014" ? "statement" : label === "query-timeout" ? "query" : undefined;
}
