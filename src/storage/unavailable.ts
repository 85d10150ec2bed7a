// Which failures of the database mean "not now" rather than "wrong": the server could not get or
// keep a connection, or the database refused it for the moment, so a retry can succeed. Everything
// else (a constraint, a syntax error, a deadlock, a disk full) stays a fault of the server. The
// answer is a short label naming the cause for the log, never the error's message, which may
// carry an address or a user name.

/** Node's errors of a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE"]);

/** PostgreSQL SQLSTATEs outside class 08 (connection exception) that a retry can get past. */
const POSTGRES_STATES = new Set([
  "53300", // too_many_connections
  "57P01", // admin_shutdown: the backend was terminated (pg_terminate_backend, a shutdown)
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up or in recovery
  "55P03", // lock_not_available (lock_timeout, NOWAIT)
]);

/** better-sqlite3's codes for a lock another connection holds past busy_timeout. */
const SQLITE_CODES = new Set(["SQLITE_BUSY", "SQLITE_BUSY_TIMEOUT", "SQLITE_LOCKED"]);

/**
 * node-postgres's own errors, which carry no code: pg-pool's wait for a connection past
 * connectionTimeoutMillis, a connection that timed out while opening or ended under a query, and a
 * client used after its connection failed.
 */
const POSTGRES_CLIENT_MESSAGES: readonly [RegExp, string][] = [
  [/^timeout exceeded when trying to connect$/, "pool-timeout"],
  [/^Connection terminated due to connection timeout$/, "connect-timeout"],
  [/^Connection terminated( unexpectedly)?$/, "connection-terminated"],
  [/^Client has encountered a connection error and is not queryable$/, "connection-error"],
];

const isObject = (e: unknown): e is Record<string, unknown> => typeof e === "object" && e !== null;

/** A label for the log when `error` is a temporary unavailability of the database; undefined otherwise. */
export function databaseUnavailable(error: unknown): string | undefined {
  if (!isObject(error)) return undefined;
  const code = error.code;
  if (typeof code === "string") {
    if (CONNECTION_CODES.has(code) || SQLITE_CODES.has(code)) return code;
    // A SQLSTATE is five characters of [0-9A-Z]: only pg's DatabaseError carries one.
    if (/^[0-9A-Z]{5}$/.test(code) && (code.startsWith("08") || POSTGRES_STATES.has(code))) return `sqlstate ${code}`;
  }
  if (error instanceof Error && !("code" in error)) {
    for (const [pattern, label] of POSTGRES_CLIENT_MESSAGES) if (pattern.test(error.message)) return label;
  }
  // Node reports a refused connection to a name of several addresses as an AggregateError of each.
  if (error instanceof AggregateError && error.errors.length > 0 && error.errors.every((e) => databaseUnavailable(e) !== undefined)) {
    return databaseUnavailable(error.errors[0]);
  }
  return undefined;
}
