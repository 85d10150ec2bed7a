// The audit trail's background work: on SQLite the inbox moved into the trail, and events past
// AUDIT_RETENTION_DAYS removed when it is set (docs/operating.md "Audit trail").
import type { BackgroundTask } from "../core/background-task.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import { repeatedSweep, repeatedTask } from "../storage/background-failures.js";
import type { Storage } from "../storage/connect.js";
import { moveAuditInbox, type InboxMove } from "./audit-inbox.js";
import { pruneAuditEvents } from "./audit-retention.js";

/** How often audit events past their retention are removed. */
const AUDIT_SWEEP_MS = 10 * 60_000;

/**
 * How often, on SQLite, the audit inbox is moved into the trail (./audit-inbox.ts): often enough to
 * keep the inbox, which lists read whole, small; seldom enough that a move's batch shares the index
 * pages of many events.
 */
const AUDIT_INBOX_MOVE_MS = 1_000;

export interface AuditUpkeepOptions {
  storage: Storage;
  clock: Clock;
  logger: Logger;
  /** Days an event is kept; null: for ever. */
  retentionDays: number | null;
  inboxMoveMs?: number;
  /** Told of each move of the inbox (metrics). */
  onInboxMoved?: (move: InboxMove) => void;
}

/** Starts the audit trail's background tasks; answers them, to be stopped. */
export function startAuditUpkeep({ storage, clock, logger, retentionDays, inboxMoveMs = AUDIT_INBOX_MOVE_MS, onInboxMoved }: AuditUpkeepOptions): BackgroundTask[] {
  const tasks: BackgroundTask[] = [];
  if (retentionDays !== null) {
    tasks.push(repeatedSweep(logger, AUDIT_SWEEP_MS, "audit event sweep", () => pruneAuditEvents(storage, clock, retentionDays), "swept audit events"));
  }
  if (storage.dialect === "sqlite") tasks.push(repeatedTask(logger, inboxMoveMs, "audit inbox move", () => moveAuditInbox(storage), (move) => onInboxMoved?.(move)));
  return tasks;
}
