// The database as this process sees it: transactions it failed, and per dialect what bounds its
// waits. PostgreSQL: the pool's connections (read when scraped) and the statements that met a
// timeout; SQLite: how long each write waited for the write lock (busy_timeout bounds it), and the
// audit inbox's moves into the trail (src/audit/audit-inbox.ts), whose stall an alert must see
// before the inbox holds days of events the trail's lists still read.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Storage } from "../storage/connect.js";
import type { DatabaseObserver, PoolCounts } from "../storage/database-observer.js";

/** Seconds a BEGIN IMMEDIATE waited: well under 1 ms without another writer, up to SQLITE_BUSY_TIMEOUT_MS (5 s by default). */
export const LOCK_WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30];

export class DatabaseMetrics implements DatabaseObserver {
  private readonly failed: Counter<"cause">;
  private readonly timeouts: Counter<"timeout"> | undefined;
  private readonly lockWaits: Histogram | undefined;
  private readonly inboxMoved: Counter | undefined;
  private readonly inboxCaughtUp: Gauge | undefined;

  constructor(
    private readonly registry: Registry,
    dialect: Storage["dialect"],
  ) {
    const registers = [registry];
    this.failed = new Counter({ name: "tenant_api_db_transactions_failed_total", help: "Transactions (and single-statement writes) the database failed, by cause: a label of the fault (pool-timeout, query-timeout, sqlstate 57014, SQLITE_BUSY...) or the database's error code.", labelNames: ["cause"], registers });
    if (dialect === "postgres") {
      this.timeouts = new Counter({ name: "tenant_api_db_statement_timeouts_total", help: "PostgreSQL statements cancelled past DATABASE_STATEMENT_TIMEOUT_MS (statement), or left unanswered past DATABASE_QUERY_TIMEOUT_MS (query).", labelNames: ["timeout"], registers });
    } else {
      this.lockWaits = new Histogram({ name: "tenant_api_sqlite_write_lock_wait_seconds", help: "SQLite: how long each write transaction waited for the database's write lock (another process's write), up to SQLITE_BUSY_TIMEOUT_MS.", buckets: LOCK_WAIT_BUCKETS, registers });
      this.inboxMoved = new Counter({ name: "tenant_api_sqlite_audit_inbox_moved_total", help: "SQLite: audit events this process moved from the inbox into the trail.", registers });
      this.inboxCaughtUp = new Gauge({ name: "tenant_api_sqlite_audit_inbox_caught_up_timestamp_seconds", help: "SQLite: when this process last found the audit inbox empty or emptied it (Unix time); 0 before its first move, about a second after the start. It stops advancing while moves fail or fall behind.", registers });
    }
  }

  transactionFailed(cause: string): void {
    this.failed.inc({ cause });
  }

  timedOut(timeout: "statement" | "query"): void {
    this.timeouts?.inc({ timeout });
  }

  waitedForWriteLock(seconds: number): void {
    this.lockWaits?.observe(seconds);
  }

  /** SQLite: a move of the audit inbox ended at `at` (ms since the epoch). */
  auditInboxMoved(moved: number, caughtUp: boolean, at: number): void {
    this.inboxMoved?.inc(moved);
    if (caughtUp) this.inboxCaughtUp?.set(at / 1000);
  }

  /** PostgreSQL: adds the pool's gauges, read when scraped. */
  watch(storage: Storage): void {
    const { poolCounts } = storage;
    if (!poolCounts) return;
    const gauge = (name: string, help: string, read: (c: PoolCounts) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(poolCounts()));
        },
      });
    gauge("tenant_api_db_pool_max", "PostgreSQL: the pool's size (DATABASE_POOL_SIZE).", (c) => c.max);
    gauge("tenant_api_db_pool_open", "PostgreSQL: the pool's connections open, in use or idle.", (c) => c.open);
    gauge("tenant_api_db_pool_in_use", "PostgreSQL: the pool's connections in use.", (c) => c.open - c.idle);
    gauge("tenant_api_db_pool_waiting", "PostgreSQL: queries waiting for a connection of the pool (up to DATABASE_POOL_TIMEOUT_MS).", (c) => c.waiting);
  }
}
