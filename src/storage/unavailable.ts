// Which failures of the database mean "not now" rather than "wrong", so a retry can succeed: the
// server could not get or keep a connection, the database refused it for the moment, a statement or
// the connection timed out, or a transaction lost to another's locks (a deadlock, a lock wait past
// lock_timeout). Everything else (a constraint, a syntax error, a disk full) stays a fault of the
// server. The answer is a short label naming the cause for the log, never the error's message,
// which may carry an address or a user name.
/** Node's errors of a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE"]);

/** PostgreSQL SQLSTATEs that end the session: the connection is gone with them. */
const SESSION_ENDING_STATES = new Set([
  "57P01", // admin_shutdown: the backend was terminated (pg_terminate_backend, a shutdown)
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up or in recovery
]);

/** PostgreSQL SQLSTATEs outside class 08 (connection exception) that a retry can get past. */
const POSTGRES_STATES = new Set([
  ...SESSION_ENDING_STATES,
  "40001", // serialization_failure
  "40P01", // deadlock_detected: this transaction was chosen to end a cycle of lock waits
  "53300", // too_many_connections
  "55P03", // lock_not_available (lock_timeout, NOWAIT)
  "57014", // query_canceled: statement_timeout (or an administrator's pg_cancel_backend)
]);

/**
 * object_not_in_prerequisite_state: when opening a connection, the database does not accept
 * connections for now (ALTER DATABASE ... ALLOW_CONNECTIONS false); elsewhere a fault of ours.
 */
const NOT_ACCEPTING_CONNECTIONS = "55000";

/** better-sqlite3's codes for a lock another connection holds past busy_timeout. */
const SQLITE_CODES = new Set(["SQLITE_BUSY", "SQLITE_BUSY_TIMEOUT", "SQLITE_LOCKED"]);

/**
 * node-postgres's own errors, which carry no code: pg-pool's wait for a connection past
 * connectionTimeoutMillis, a connection that timed out while opening or ended under a query, a
 * client used after its connection failed, and a query unanswered past query_timeout.
 */
const POSTGRES_CLIENT_MESSAGES: readonly [RegExp, string][] = [
  [/^timeout exceeded when trying to connect$/, "pool-timeout"],
  [/^Connection terminated due to connection timeout$/, "connect-timeout"],
  [/^Connection terminated( unexpectedly)?$/, "connection-terminated"],
  [/^Client has encountered a connection error and is not queryable$/, "connection-error"],
  [/^Query read timeout$/, "query-timeout"],
];

/** Labels of causes that leave the connection they happened on unusable (the pool's wait for one is not such a cause). */
const CONNECTION_LOST = new Set([...CONNECTION_CODES, ...[...SESSION_ENDING_STATES].map((s) => `sqlstate ${s}`), "connect-timeout", "connection-terminated", "connection-error", "query-timeout"]);

const isObject = (e: unknown): e is Record<string, unknown> => typeof e === "object" && e !== null;

/** Errors thrown while a connection was being opened (marked by `openingFailed`). */
const whileOpening = new WeakSet<object>();

/** Marks `error` as the failure to open a connection, and returns it. */
export function openingFailed(error: unknown): unknown {
  if (isObject(error)) whileOpening.add(error);
  return error;
}

/** A label for the log when `error` is a temporary unavailability of the database; undefined otherwise. */
export function databaseUnavailable(error: unknown): string | undefined {
  if (!isObject(error)) return undefined;
  const code = error.code;
  if (typeof code === "string") {
    if (CONNECTION_CODES.has(code) || SQLITE_CODES.has(code)) return code;
    // A SQLSTATE is five characters of [0-9A-Z]: only pg's DatabaseError carries one.
    if (/^[0-9A-Z]{5}$/.test(code) && (code.startsWith("08") || POSTGRES_STATES.has(code) || (code === NOT_ACCEPTING_CONNECTIONS && whileOpening.has(error)))) return `sqlstate ${code}`;
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

/** Whether `error`, met on an open connection, leaves that connection unusable (lost, ended, or silent past the query timeout). */
export function connectionLost(error: unknown): boolean {
  const label = databaseUnavailable(error);
  return label !== undefined && (CONNECTION_LOST.has(label) || label.startsWith("sqlstate 08"));
}
