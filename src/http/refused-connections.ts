// Connections a listener refuses because the process is out of file descriptors. At the open-file
// limit libuv accepts and closes waiting connections without a trace, and everything else that needs a
// descriptor fails too; so each listener takes connections up to a cap (`maxConnections`) below it, and
// what it refuses past the cap ('drop'), or when accept() fails anyway ('error', which unheard would end
// the process), is counted and logged: at once, then at most once per LOG_EVERY_MS with the count since.
// docs/operating.md, "Connections and open files".
import { readFileSync } from "node:fs";
import type { Server } from "node:net";
import type { Logger } from "../core/logger.js";

export type ListenerName = "api" | "metrics";

/** The reason of a connection closed at the listener's cap. */
const AT_CAP = "open-file-limit";

export interface RefusedConnectionsObserver {
  /** `reason`: AT_CAP, or the code of the accept() that failed (EMFILE, ENFILE). */
  connectionRefused(listener: ListenerName, reason: string): void;
}

const LOG_EVERY_MS = 10_000;

/** Descriptors kept for what is not a connection to the API: Node's own (about 40 with SQLite's), files, the metrics listener's, outbound requests. */
const RESERVED_FILES = 64;

/** The metrics listener's connections at most: a scraper keeps one, a pair of them two. */
export const METRICS_CONNECTIONS = 16;

/** This process's limit on open files (Linux: /proc/self/limits; Node raises the soft limit to the hard one at start); undefined where unknown or unlimited. */
export function openFileLimit(): number | undefined {
  try {
    const found = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return found ? Number(found[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The API's connections at most under `limit` open files: what is left once the database's
 * connections and a reserve (RESERVED_FILES, or an eighth of the limit where that is more) are
 * kept; undefined (no cap) where the limit is unknown or leaves nothing.
 */
export function apiConnectionCap(limit: number | undefined, databaseConnections: number): number | undefined {
  if (limit === undefined) return undefined;
  const cap = limit - Math.max(RESERVED_FILES, Math.floor(limit / 8)) - databaseConnections;
  return cap > 0 ? cap : undefined;
}

/** Caps `server`'s connections at `cap` (none when undefined), and counts and logs what it refuses. Call once it listens. */
export function reportRefusedConnections(server: Server, listener: ListenerName, cap: number | undefined, logger: Logger, observer?: RefusedConnectionsObserver): void {
  if (cap !== undefined) server.maxConnections = cap;
  let since: Record<string, number> = {};
  let window: NodeJS.Timeout | undefined;
  const write = (): boolean => {
    if (Object.keys(since).length === 0) return false;
    logger.warn({ msg: "connections refused: out of file descriptors", listener, refused: since, maxConnections: cap, openFileLimit: openFileLimit() });
    since = {};
    return true;
  };
  // A line at the first refusal; then, while refusals go on, one at the end of each window.
  const windowEnded = () => {
    window = write() ? setTimeout(windowEnded, LOG_EVERY_MS).unref() : undefined;
  };
  const refused = (reason: string) => {
    observer?.connectionRefused(listener, reason);
    since[reason] = (since[reason] ?? 0) + 1;
    if (window !== undefined) return;
    write();
    window = setTimeout(windowEnded, LOG_EVERY_MS).unref();
  };
  server.on("drop", () => refused(AT_CAP));
  server.on("error", (err: NodeJS.ErrnoException) => refused(err.code ?? "unknown"));
  // What was refused since the last line is not lost with the listener.
  server.once("close", () => {
    clearTimeout(window);
    write();
  });
}
