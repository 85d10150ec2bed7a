// All configuration, from the environment, typed and validated in one place. Every problem found
// stops the process at start (exit code 2) with a line naming its variable, all of them in one
// run; secrets are never echoed back.
import { resolve } from "node:path";
import { DEFAULT_HEAP_GROWTH_PERCENT } from "./core/heap-growth.js";
import { parseTrustProxy } from "./core/ip-address.js";
import { whyNotListenable, whyPortNotListenable } from "./core/listen-address.js";
import type { LogLevel } from "./core/logger.js";
import type { RateLimitQuotas, RateQuota } from "./core/rate-limiter.js";

export interface Config {
  port: number;
  host: string;
  /** The tenant base URL: the `sub` of webhook JWTs and the prefix of listener URLs. */
  baseUrl: string;
  database: DatabaseConfig;
  tenantId: string;
  fundCurrency: string;
  /**
   * The super-admin made on a database with no users: with the credential of BOOTSTRAP_CLIENT_ID
   * and BOOTSTRAP_CLIENT_SECRET, or with a generated one written to a new file (BOOTSTRAP_CREDENTIAL_FILE).
   */
  bootstrap: { kind: "configured"; clientId: string; clientSecret: string } | { kind: "generated"; file: string };
  logLevel: LogLevel;
  /** Validate every response against the contract (on unless NODE_ENV=production). */
  validateResponses: boolean;
  /** Lifetime of issued access tokens, in seconds. */
  accessTokenTtlSeconds: number;
  /** SIGNING_KEY_ROTATION_DAYS: the age at which the access-token signing key is replaced by a new one; 0: never. */
  signingKeyRotationDays: number;
  /** The key that seals webhook secrets, kept answers and signing keys: SECRETS_KEY, else a key file, created if absent unless NODE_ENV=production. */
  secretsKey: { kind: "value"; key: Buffer } | { kind: "file"; path: string; create: boolean };
  /** MIGRATE_AT_START: apply pending migrations at start (else refuse to start while any is pending: `npm run migrate` applies them). */
  migrateAtStart: boolean;
  /** How long a rotated-out webhook secret stays valid, in seconds. */
  webhookSecretGraceSeconds: number;
  /** JWKS_ALLOW_INSECURE=1: allow http: and loopback/private JWKS addresses (development, tests). */
  jwksAllowInsecure: boolean;
  /**
   * NOTIFICATION_ALLOW_INSECURE=1: allow http: and loopback/private addresses for the `notify` steps
   * of automations (development, tests). A flag of its own: a development JWKS on localhost does
   * not open the automations' notifications to the internal network.
   */
  notificationAllowInsecure: boolean;
  /** TRUST_PROXY: CIDRs of proxies whose X-Forwarded-For is honoured; empty trusts none. */
  trustProxy: string[];
  /**
   * TRACE_CONTEXT_TRUSTED: CIDRs of the peers (a socket's, not a forwarded client's) whose trace
   * context a request that authenticated continues (http/request-span.ts); empty trusts none;
   * null (unset): TRUST_PROXY's.
   */
  traceContextTrusted: string[] | null;
  /** RATE_LIMIT_SOURCE, _CREDENTIAL, _LISTENER, _LISTENER_FAILURES (each null when off; all null with RATE_LIMIT=off). */
  rateLimits: RateLimitQuotas;
  /** HEAP_GROWTH_PERCENT: how far V8's heap grows past its live part before a full collection; 0 leaves V8's own choice. */
  heapGrowthPercent: number;
  /** SHUTDOWN_DRAIN_SECONDS and SHUTDOWN_TIMEOUT_SECONDS: how a signal stops the server (see server.ts `close`, main.ts). */
  shutdown: { drainSeconds: number; timeoutSeconds: number };
  /** EXECUTION_LEASE_SECONDS: how long a worker's claim on an execution lasts before another worker may resume it. */
  executionLeaseSeconds: number;
  /** EXECUTION_WORKER_RUNS: the runs one instance has under way at most. */
  executionWorkerRuns: number;
  /**
   * How `notify` steps send: NOTIFY_RETRY_SCHEDULE, the waits before the attempts after the first;
   * NOTIFY_TIMEOUT_SECONDS, each attempt's; NOTIFY_MAX_IN_FLIGHT_PER_DESTINATION, the requests one
   * instance has in flight to one host and port at most (an execution over it parks).
   */
  notifications: {
    retryScheduleMs: number[];
    attemptTimeoutMs: number;
    maxInFlightPerDestination: number;
    /** NOTIFY_CIRCUIT_FAILURES, NOTIFY_CIRCUIT_COOLDOWN_SECONDS, NOTIFY_DISABLE_AFTER_SECONDS (0: never; null here). */
    health: { circuitFailures: number; cooldownMs: number; disableAfterMs: number | null };
  };
  /**
   * BULK_REDRIVE_PER_SECOND, the executions a bulk redrive makes due per second (its new ones and
   * the parked ones it moves up); BULK_REDRIVE_MAX_PER_CALL, the executions one call looks at.
   */
  bulkRedrive: { perSecond: number; maxPerCall: number };
  /** METRICS_PORT and METRICS_HOST: where Prometheus scrapes `GET /metrics`, on a listener of its own; null (off) unless METRICS_PORT is set. */
  metrics: { port: number; host: string } | null;
  /** EXECUTION_RETENTION_DAYS, _COUNT and _SWEEP_SECONDS: which finished executions are kept, and how often the others are removed (automations/execution-retention.ts). */
  executionRetention: { days: number; count: number | null; sweepSeconds: number };
  /** AUDIT_RETENTION_DAYS: audit events older than this many days are removed; null (the default, `kept`): kept for ever. */
  auditRetentionDays: number | null;
  /** The OTEL_* variables of traces; null when traces are off (no OTLP endpoint set, or OTEL_SDK_DISABLED=true). */
  tracing: TracingConfig | null;
}

/** OpenTelemetry's trace samplers that need nothing beyond this process (OTEL_TRACES_SAMPLER). */
export const TRACE_SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

/** OTLP over HTTP, in its two encodings (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL); gRPC is not shipped. */
export const TRACE_PROTOCOLS = ["http/protobuf", "http/json"] as const;

export interface TracingConfig {
  /** The collector's traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended. */
  url: string;
  protocol: (typeof TRACE_PROTOCOLS)[number];
  sampler: TraceSampler;
  /** OTEL_TRACES_SAMPLER_ARG: the share of new traces the ratio samplers keep, 0 to 1. */
  ratio: number;
  /**
   * OTEL_BSP_SCHEDULE_DELAY: how long finished spans wait on the server's thread for their batch,
   * in ms. Briefly by default: held for the SDK's own default of 5 s, sampled spans outlived the
   * young generation and the server's garbage collection per request nearly doubled
   * (bench/RESULTS.md, "Metrics and traces").
   */
  batchDelayMs: number;
}

/**
 * Where the data lives, and how long a request waits for the database before it is answered 503
 * UNAVAILABLE. The waits are optional for callers that open a database of their own (defaults below).
 */
export type DatabaseConfig =
  | {
      kind: "sqlite";
      path: string;
      /** SQLITE_BUSY_TIMEOUT_MS: how long a write waits for another process's write lock. */
      busyTimeoutMs?: number;
    }
  | {
      kind: "postgres";
      url: string;
      /** DATABASE_POOL_SIZE: connections of this instance at most. */
      poolSize?: number;
      /** DATABASE_POOL_TIMEOUT_MS: how long a query waits for a connection of the pool (a new one's opening included). */
      poolTimeoutMs?: number;
      /** DATABASE_STATEMENT_TIMEOUT_MS: PostgreSQL's statement_timeout, lock waits included (0: none). */
      statementTimeoutMs?: number;
      /** DATABASE_LOCK_TIMEOUT_MS: PostgreSQL's lock_timeout, each wait for a lock (0: none). */
      lockTimeoutMs?: number;
      /** DATABASE_QUERY_TIMEOUT_MS: how long this process waits for any answer of the database (0: for ever). */
      queryTimeoutMs?: number;
      /** DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: PostgreSQL's idle_in_transaction_session_timeout (0: none). */
      idleInTransactionTimeoutMs?: number;
      /** DATABASE_KEEPALIVE_MS: idle time of a connection before TCP keepalive probes start (0: no keepalive). */
      keepAliveMs?: number;
    };

/**
 * The statement timeout is well above any statement of a request (milliseconds, or a lock wait
 * under contention), and the query timeout above it: a statement that runs too long is cancelled
 * by the database, which keeps the connection; only a connection that no longer answers (a failover,
 * a dead host, a network that drops everything) reaches the query timeout, and is closed. The lock
 * timeout is below the statement timeout: a statement that waits for a table someone locked (an
 * administrator's LOCK TABLE, a long migration) gives its connection back within it.
 */
export const DATABASE_DEFAULTS = {
  sqliteBusyTimeoutMs: 5_000,
  poolSize: 10,
  poolTimeoutMs: 5_000,
  statementTimeoutMs: 15_000,
  lockTimeoutMs: 2_000,
  queryTimeoutMs: 20_000,
  idleInTransactionTimeoutMs: 10_000,
  keepAliveMs: 10_000,
} as const;

/**
 * What is wrong with the configuration: every problem found, one a line, each naming its variable
 * (never a secret's value). Ends the process with exit code 2 (exitRefused).
 */
export class ConfigError extends Error {
  override name = "ConfigError";
  readonly problems: readonly string[];

  constructor(problems: string | readonly string[]) {
    const list = typeof problems === "string" ? [problems] : problems;
    super(list.join("; "));
    this.problems = list;
  }
}

/**
 * The database, or the key, is not one this release may start with (its migrations, what it holds
 * sealed). Like a ConfigError it ends the process with exit code 2: restarting will not help.
 */
export class StartRefused extends Error {
  override name = "StartRefused";
}

/** Ends the process with exit code 2 and the message of a ConfigError (a line per problem) or StartRefused (a process manager can be told not to restart on it); throws anything else on. */
export function exitRefused(e: unknown): never {
  if (e instanceof ConfigError) process.stderr.write(e.problems.map((problem) => `configuration error: ${problem}\n`).join(""));
  else if (e instanceof StartRefused) process.stderr.write(`refusing to start: ${e.message}\n`);
  else throw e;
  process.exit(2);
}

/** The configuration `load` reads, or the process ended as `exitRefused` ends it. */
export function configOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (e) {
    return exitRefused(e);
  }
}

/** NODE_ENV's values, read in any case (`Production` is production); unset is development. */
const NODE_ENVS = ["production", "development", "test"] as const;

/**
 * The environment as this module reads it: every variable goes through here (one set to "" reads
 * as unset), and a problem is kept instead of thrown, so that `done` names every one of them at
 * once. A check of one variable against another runs only when both were read without a problem
 * (`valid`): a value that fell back to its default is not what the operator set.
 */
class Environment {
  /** NODE_ENV=production, in any case: nothing is made up, responses are not validated. */
  readonly production: boolean;
  private readonly problems: string[] = [];
  private readonly invalidNames = new Set<string>();

  constructor(private readonly env: NodeJS.ProcessEnv) {
    this.production = this.nodeEnv() === "production";
  }

  value(name: string): string | undefined {
    const raw = this.env[name];
    return raw === "" ? undefined : raw;
  }

  /** `name`'s value is wrong: `message` says how (and names it). */
  invalid(name: string, message: string): void {
    this.invalidNames.add(name);
    this.problems.push(message);
  }

  /** Variables that are right one by one contradict each other: `message` names them. */
  conflict(message: string): void {
    this.problems.push(message);
  }

  /** Whether each of `names` was read without a problem. */
  valid(...names: string[]): boolean {
    return names.every((name) => !this.invalidNames.has(name));
  }

  /** Under NODE_ENV=production, `name` (or what `shown` names) must be `given`: `why` says what would be made up without it. */
  required(name: string, given: boolean, why: string, shown = name): void {
    if (this.production && !given) this.invalid(name, `${shown} must be set when NODE_ENV=production: ${why}`);
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.value(name);
    if (raw === undefined) return fallback;
    const digits = /^[0-9]+$/.test(raw);
    const n = Number(raw);
    if (digits && n >= min && n <= max) return n;
    this.invalid(name, digits ? `${name} must be between ${min} and ${max}, got ${n}` : `${name} must be an integer between ${min} and ${max}, got "${raw}"`);
    return fallback;
  }

  flag(name: string, fallback = false): boolean {
    const raw = this.value(name);
    if (raw === undefined) return fallback;
    if (raw === "0" || raw === "false") return false;
    if (raw === "1" || raw === "true") return true;
    this.invalid(name, `${name} must be 1 (true) or 0 (false)`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.value(name);
    if (raw === undefined) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.invalid(name, `${name} must be one of ${allowed.join(", ")}, got "${raw}"`);
    return fallback;
  }

  /** `raw` (the value of `name`, or its default) as an absolute http(s) URL without a trailing slash. */
  url(name: string, raw: string): string {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      this.invalid(name, `${name} must be an absolute http(s) URL, got "${raw}"`);
      return raw;
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") this.invalid(name, `${name} must be an http(s) URL`);
    else if (parsed.search || parsed.hash) this.invalid(name, `${name} must not carry a query or fragment`);
    return parsed.toString().replace(/\/$/, "");
  }

  /** Throws a ConfigError naming every problem found; nothing when there is none. */
  done(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }

  /**
   * An unknown value is refused, and the rest is checked as for production: a start refused anyway
   * names at once all that a production start would need (a misspelt NODE_ENV is a deployment's).
   */
  private nodeEnv(): (typeof NODE_ENVS)[number] {
    const raw = this.value("NODE_ENV");
    if (raw === undefined) return "development";
    const known = NODE_ENVS.find((value) => value === raw.toLowerCase());
    if (known) return known;
    this.invalid("NODE_ENV", `NODE_ENV must be one of ${NODE_ENVS.join(", ")} (in any case), or unset (development), got "${raw}"`);
    return "production";
  }
}

/** What `read` makes of `env`, or a ConfigError naming every problem found. */
function load<T>(env: NodeJS.ProcessEnv, read: (env: Environment) => T): T {
  const environment = new Environment(env);
  const value = read(environment);
  environment.done();
  return value;
}

const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** Where the data lives: all `npm run migrate` reads of the configuration. */
export const loadDatabaseConfig = (env: NodeJS.ProcessEnv = process.env): DatabaseConfig => load(env, database);

function database(env: Environment): DatabaseConfig {
  const raw = env.value("DATABASE_URL");
  env.required("DATABASE_URL", raw !== undefined, "without it the server would start on a new SQLite file of its own, with a new super-admin");
  const busyTimeoutMs = env.integer("SQLITE_BUSY_TIMEOUT_MS", DATABASE_DEFAULTS.sqliteBusyTimeoutMs, 0, 600_000);
  if (!raw) return { kind: "sqlite", path: resolve("data/tenant.sqlite"), busyTimeoutMs };
  if (raw.startsWith("sqlite:")) {
    const path = raw.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "");
    if (!path) env.invalid("DATABASE_URL", `DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/tenant.sqlite`);
    return { kind: "sqlite", path: path === ":memory:" ? path : resolve(path), busyTimeoutMs };
  }
  if (/^postgres(ql)?:\/\//.test(raw)) {
    return {
      kind: "postgres",
      url: raw,
      // Two at least: the migrations at start hold one for their lock while they run on another.
      poolSize: env.integer("DATABASE_POOL_SIZE", DATABASE_DEFAULTS.poolSize, 2, 1_000),
      poolTimeoutMs: env.integer("DATABASE_POOL_TIMEOUT_MS", DATABASE_DEFAULTS.poolTimeoutMs, 1, 600_000),
      ...databaseTimeouts(env),
      idleInTransactionTimeoutMs: env.integer("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", DATABASE_DEFAULTS.idleInTransactionTimeoutMs, 0, 3_600_000),
      keepAliveMs: keepAlive(env),
    };
  }
  env.invalid("DATABASE_URL", `DATABASE_URL must start with sqlite: or postgres://`);
  return { kind: "sqlite", path: raw, busyTimeoutMs };
}

/** A timeout, by its variable. */
interface Timeout {
  name: string;
  value: number;
}

/** `inner`, when on (not 0), must end before `outer` does, when on: `why` says what would go wrong. */
function below(env: Environment, inner: Timeout, outer: Timeout, why: string): void {
  if (inner.value > 0 && outer.value > 0 && inner.value >= outer.value && env.valid(inner.name, outer.name)) {
    env.conflict(`${inner.name} (${inner.value}) must be less than ${outer.name} (${outer.value}): ${why}`);
  }
}

/**
 * The database cancels a statement that runs too long, and keeps its connection, before this
 * process gives a connection that does not answer up as lost. A query timeout without a statement
 * timeout would take a statement that legitimately runs long for a lost connection, and close the
 * connection while the database runs the statement on: refused.
 */
function databaseTimeouts(env: Environment): { statementTimeoutMs: number; lockTimeoutMs: number; queryTimeoutMs: number } {
  const statement = { name: "DATABASE_STATEMENT_TIMEOUT_MS", value: env.integer("DATABASE_STATEMENT_TIMEOUT_MS", DATABASE_DEFAULTS.statementTimeoutMs, 0, 3_600_000) };
  const query = { name: "DATABASE_QUERY_TIMEOUT_MS", value: env.integer("DATABASE_QUERY_TIMEOUT_MS", DATABASE_DEFAULTS.queryTimeoutMs, 0, 3_600_000) };
  // Unset, the lock timeout is none when the statement timeout is no longer: that bounds the wait then.
  const lockDefault = statement.value > 0 && statement.value <= DATABASE_DEFAULTS.lockTimeoutMs ? 0 : DATABASE_DEFAULTS.lockTimeoutMs;
  const lock = { name: "DATABASE_LOCK_TIMEOUT_MS", value: env.integer("DATABASE_LOCK_TIMEOUT_MS", lockDefault, 0, 3_600_000) };
  below(env, lock, statement, "a statement waiting for a locked table gives its connection back before the statement timeout would cut it");
  below(env, statement, query, "the database cancels a statement that runs too long before this process gives its connection up as lost");
  if (statement.value === 0 && query.value > 0 && env.valid(statement.name, query.name)) {
    env.conflict(
      `DATABASE_QUERY_TIMEOUT_MS (${query.value}) needs DATABASE_STATEMENT_TIMEOUT_MS on, below it: with DATABASE_STATEMENT_TIMEOUT_MS=0 a statement that runs long would be taken for a lost connection, closed while the database runs the statement on. Set DATABASE_STATEMENT_TIMEOUT_MS below ${query.value}, or DATABASE_QUERY_TIMEOUT_MS=0 as well`,
    );
  }
  return { statementTimeoutMs: statement.value, lockTimeoutMs: lock.value, queryTimeoutMs: query.value };
}

/** TCP counts keepalive's idle time in whole seconds: 0 (off) or a second at least. */
function keepAlive(env: Environment): number {
  const ms = env.integer("DATABASE_KEEPALIVE_MS", DATABASE_DEFAULTS.keepAliveMs, 0, 3_600_000);
  if (ms > 0 && ms < 1_000) env.invalid("DATABASE_KEEPALIVE_MS", `DATABASE_KEEPALIVE_MS must be 0 (off) or between 1000 and 3600000, got ${ms}`);
  return ms;
}

/** Where the key that seals secrets comes from (checked; a key file is read later, by loadSecretsKey). */
export const secretsKey = (env: NodeJS.ProcessEnv = process.env): Config["secretsKey"] => load(env, secretsKeySource);

function secretsKeySource(env: Environment): Config["secretsKey"] {
  const value = env.value("SECRETS_KEY");
  const file = env.value("SECRETS_KEY_FILE");
  env.required("SECRETS_KEY", value !== undefined || file !== undefined, "without it the server would make a key of its own, which opens none of the secrets sealed with the real one", "SECRETS_KEY (or SECRETS_KEY_FILE)");
  if (value !== undefined && file !== undefined) env.conflict(`SECRETS_KEY and SECRETS_KEY_FILE are both set: set one of them, the key or the file that holds it`);
  if (value !== undefined) {
    const key = Buffer.from(value, "base64url");
    if (key.length !== 32 || !/^[A-Za-z0-9_-]+$/.test(value)) env.invalid("SECRETS_KEY", `SECRETS_KEY must be 32 bytes as base64url (43 characters)`);
    return { kind: "value", key };
  }
  return { kind: "file", path: resolve(file ?? "data/secrets.key"), create: !env.production };
}

/**
 * What `npm run rotate-signing-key` reads: the database and the secrets key. A missing key file is
 * never created there: a new key would seal a signing key that no instance opens.
 */
export const loadKeyCommandConfig = (env: NodeJS.ProcessEnv = process.env): Pick<Config, "database" | "secretsKey"> =>
  load(env, (env) => {
    const config = { database: database(env), secretsKey: secretsKeySource(env) };
    return { ...config, secretsKey: config.secretsKey.kind === "file" ? { ...config.secretsKey, create: false } : config.secretsKey };
  });

function trustProxy(env: Environment): string[] {
  try {
    return parseTrustProxy(env.value("TRUST_PROXY"));
  } catch (e) {
    env.invalid("TRUST_PROXY", e instanceof Error ? e.message : String(e));
    return [];
  }
}

/** Unset: null, for TRUST_PROXY's proxies (the context of their clients comes through them); `none`: no peer. */
function traceContextTrusted(env: Environment): string[] | null {
  const raw = env.value("TRACE_CONTEXT_TRUSTED");
  if (raw === undefined) return null;
  if (raw.trim() === "none") return [];
  try {
    return parseTrustProxy(raw, "TRACE_CONTEXT_TRUSTED");
  } catch (e) {
    env.invalid("TRACE_CONTEXT_TRUSTED", e instanceof Error ? e.message : String(e));
    return [];
  }
}

/**
 * The defaults: a steady 200, 100 and 200 requests a second, and a minute's worth at once; a
 * sender's failed authentications on a listener, one a second and 60 at once.
 */
export const RATE_LIMIT_DEFAULTS = { source: "12000/60", credential: "6000/60", listener: "12000/60", "listener-failures": "60/60" } as const;

/** `<requests>/<seconds>` (e.g. 6000/60: 6,000 requests a minute), or `off`. */
function rateQuota(env: Environment, name: string, fallback: string): RateQuota | null {
  const raw = env.value(name) ?? fallback;
  if (raw === "off") return null;
  const match = /^([0-9]{1,7})\/([0-9]{1,5})$/.exec(raw);
  const quota = Number(match?.[1]);
  const windowSeconds = Number(match?.[2]);
  if (!match || quota < 1 || quota > 1_000_000 || windowSeconds < 1 || windowSeconds > 86_400) {
    env.invalid(name, `${name} must be <requests>/<seconds> (1 to 1000000 requests, 1 to 86400 seconds, e.g. ${fallback}) or off, got "${raw}"`);
    return null;
  }
  return { quota, windowSeconds };
}

function rateLimits(env: Environment): RateLimitQuotas {
  const on = env.oneOf("RATE_LIMIT", ["on", "off"], "on") === "on";
  const quotas = {
    source: rateQuota(env, "RATE_LIMIT_SOURCE", RATE_LIMIT_DEFAULTS.source),
    credential: rateQuota(env, "RATE_LIMIT_CREDENTIAL", RATE_LIMIT_DEFAULTS.credential),
    listener: rateQuota(env, "RATE_LIMIT_LISTENER", RATE_LIMIT_DEFAULTS.listener),
    "listener-failures": rateQuota(env, "RATE_LIMIT_LISTENER_FAILURES", RATE_LIMIT_DEFAULTS["listener-failures"]),
  };
  return on ? quotas : { source: null, credential: null, listener: null, "listener-failures": null };
}

/** How a signal stops the server: a drain, within a deadline. */
function shutdown(env: Environment): Config["shutdown"] {
  const drain = { name: "SHUTDOWN_DRAIN_SECONDS", value: env.integer("SHUTDOWN_DRAIN_SECONDS", 5, 0, 300) };
  const timeout = { name: "SHUTDOWN_TIMEOUT_SECONDS", value: env.integer("SHUTDOWN_TIMEOUT_SECONDS", 25, 1, 3_600) };
  below(env, drain, timeout, "the drain ends before the deadline, so that requests arriving in its last moment may still finish");
  return { drainSeconds: drain.value, timeoutSeconds: timeout.value };
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The Standard Webhooks specification's schedule after the first attempt. */
const NOTIFY_RETRY_DEFAULT = "5s,5m,30m,2h,5h,10h,10h";
const NOTIFY_RETRIES_MAX = 20;
const NOTIFY_WAIT_MAX_MS = 7 * 86_400_000;

/**
 * The waits are durations with a unit (`500ms`, `5s`, `5m`, `2h`, `1d`), `none` for no attempt
 * after the first. The timeout takes a third of the execution lease at most, so that a run that
 * sends keeps its lease with room for its save: 15 s by default, or that third when less.
 */
function notifications(env: Environment, leaseSeconds: number): Config["notifications"] {
  const raw = env.value("NOTIFY_RETRY_SCHEDULE") ?? NOTIFY_RETRY_DEFAULT;
  const waits = raw.trim() === "none" ? [] : raw.split(",").map((w) => /^\s*(\d{1,9})(ms|s|m|h|d)\s*$/.exec(w));
  const retryScheduleMs = waits.map((m) => (m ? Number(m[1]) * DURATION_UNITS[m[2]!]! : NaN));
  if (retryScheduleMs.some((ms) => !(ms <= NOTIFY_WAIT_MAX_MS)) || retryScheduleMs.length > NOTIFY_RETRIES_MAX) {
    env.invalid("NOTIFY_RETRY_SCHEDULE", `NOTIFY_RETRY_SCHEDULE must be \`none\` or up to ${NOTIFY_RETRIES_MAX} comma-separated waits of at most 7 days, each a number and a unit (ms, s, m, h, d) such as 5s,5m,2h, got "${raw}"`);
  }
  const timeout = env.value("NOTIFY_TIMEOUT_SECONDS") ?? String(Math.min(15, Math.floor((leaseSeconds / 3) * 1000) / 1000));
  const seconds = /^\d{1,5}(\.\d{1,3})?$/.test(timeout) ? Number(timeout) : NaN;
  if (!(seconds >= 0.1 && seconds <= leaseSeconds / 3)) {
    env.invalid("NOTIFY_TIMEOUT_SECONDS", `NOTIFY_TIMEOUT_SECONDS must be a number of seconds from 0.1 to a third of EXECUTION_LEASE_SECONDS (${Math.floor((leaseSeconds / 3) * 1000) / 1000}), got "${timeout}"`);
  }
  const disableAfter = env.integer("NOTIFY_DISABLE_AFTER_SECONDS", 5 * 86_400, 0, 365 * 86_400);
  return {
    retryScheduleMs: retryScheduleMs.every(Number.isFinite) ? retryScheduleMs : [],
    attemptTimeoutMs: Number.isFinite(seconds) ? Math.round(seconds * 1000) : 15_000,
    maxInFlightPerDestination: env.integer("NOTIFY_MAX_IN_FLIGHT_PER_DESTINATION", 8, 1, 1_000),
    health: {
      circuitFailures: env.integer("NOTIFY_CIRCUIT_FAILURES", 5, 1, 1_000),
      cooldownMs: env.integer("NOTIFY_CIRCUIT_COOLDOWN_SECONDS", 60, 1, 86_400) * 1000,
      disableAfterMs: disableAfter === 0 ? null : disableAfter * 1000,
    },
  };
}

/**
 * Traces are on when an OTLP endpoint is set, as in every OpenTelemetry SDK. The variables are the
 * standard ones; those that decide what is exported and kept are checked here, so that a typo stops
 * the start instead of falling back to the SDK's default (which keeps every trace).
 */
function tracing(env: Environment): TracingConfig | null {
  const tracesEndpoint = env.value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const endpoint = env.value("OTEL_EXPORTER_OTLP_ENDPOINT");
  if ((tracesEndpoint === undefined && endpoint === undefined) || env.value("OTEL_SDK_DISABLED")?.toLowerCase() === "true") return null;
  const collector = tracesEndpoint !== undefined ? env.url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracesEndpoint) : `${env.url("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint!)}/v1/traces`;
  const protocolVariable = env.value("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = env.oneOf(protocolVariable, TRACE_PROTOCOLS, "http/protobuf");
  const sampler = env.oneOf("OTEL_TRACES_SAMPLER", TRACE_SAMPLERS, "parentbased_always_on");
  return {
    url: collector,
    protocol,
    sampler,
    ratio: sampler.endsWith("traceidratio") ? samplerRatio(env) : 1,
    batchDelayMs: env.integer("OTEL_BSP_SCHEDULE_DELAY", 200, 1, 3_600_000),
  };
}

function samplerRatio(env: Environment): number {
  const raw = env.value("OTEL_TRACES_SAMPLER_ARG");
  if (raw === undefined) return 1;
  const ratio = Number(raw);
  if (!/^[0-9.eE+-]+$/.test(raw) || !(ratio >= 0 && ratio <= 1)) env.invalid("OTEL_TRACES_SAMPLER_ARG", `OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (the share of new traces kept), got "${raw}"`);
  return ratio;
}

/** Off unless METRICS_PORT is set; never on the API's port, so that the API's clients cannot read it. */
function metrics(env: Environment, apiPort: number): Config["metrics"] {
  if (env.value("METRICS_PORT") === undefined) return null;
  const port = env.integer("METRICS_PORT", 0, 1, 65535);
  if (env.valid("METRICS_PORT", "PORT") && port === apiPort) env.conflict(`METRICS_PORT must differ from PORT (${apiPort}): the metrics have a listener of their own`);
  return { port, host: env.value("METRICS_HOST") ?? "127.0.0.1" };
}

/**
 * At least the 7 days webhook event records are kept: an event in the delivery log names its
 * execution, which the age alone never removes before it. Never off: storage would grow for ever.
 * The count is off unless set.
 */
function executionRetention(env: Environment): Config["executionRetention"] {
  const count = env.value("EXECUTION_RETENTION_COUNT") ?? "off";
  const max = 100_000_000;
  const counted = count !== "off" && /^[0-9]+$/.test(count) && Number(count) >= 1 && Number(count) <= max;
  if (count !== "off" && !counted) env.invalid("EXECUTION_RETENTION_COUNT", `EXECUTION_RETENTION_COUNT must be off or an integer between 1 and ${max}, got "${count}"`);
  return {
    days: env.integer("EXECUTION_RETENTION_DAYS", 30, 7, 3_650),
    count: counted ? Number(count) : null,
    sweepSeconds: env.integer("EXECUTION_RETENTION_SWEEP_SECONDS", 60, 1, 86_400),
  };
}

/** Kept unless set: an audit trail is evidence, and how long it must be kept is the operator's compliance decision. */
function auditRetentionDays(env: Environment): number | null {
  const raw = env.value("AUDIT_RETENTION_DAYS");
  return raw === undefined || raw === "kept" ? null : env.integer("AUDIT_RETENTION_DAYS", 0, 30, 36_500);
}

/**
 * The configured credential, or where a generated one is written (its file is never written over,
 * and without a file to write it the start is refused: identity/bootstrap.ts).
 */
function bootstrap(env: Environment): Config["bootstrap"] {
  const clientId = env.value("BOOTSTRAP_CLIENT_ID");
  const clientSecret = env.value("BOOTSTRAP_CLIENT_SECRET");
  const file = env.value("BOOTSTRAP_CREDENTIAL_FILE");
  if (clientId !== undefined && !/^[A-Za-z0-9._-]{3,128}$/.test(clientId)) env.invalid("BOOTSTRAP_CLIENT_ID", `BOOTSTRAP_CLIENT_ID must be 3-128 characters of [A-Za-z0-9._-]`);
  if (clientSecret !== undefined && (clientSecret.length < 16 || clientSecret.length > 256)) env.invalid("BOOTSTRAP_CLIENT_SECRET", `BOOTSTRAP_CLIENT_SECRET must be 16 to 256 characters`);
  if ((clientId === undefined) !== (clientSecret === undefined)) env.conflict(`BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET go together`);
  if (clientId === undefined || clientSecret === undefined) return { kind: "generated", file: resolve(file ?? "data/bootstrap-credential.env") };
  if (file !== undefined) env.conflict(`BOOTSTRAP_CREDENTIAL_FILE and BOOTSTRAP_CLIENT_ID/BOOTSTRAP_CLIENT_SECRET are both set: the file receives a generated credential, and with a configured one none is generated. Set one or the other`);
  return { kind: "configured", clientId, clientSecret };
}

/** The configuration of a server in this process (the sandbox and the tests run one): every problem found, named at once. */
export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => load(env, serverConfig);

/**
 * `npm start`'s configuration: loadConfig's, and the addresses to listen on found to be this
 * machine's (a name that does not resolve, an address of another machine), all before anything is
 * created, and every problem named at once.
 */
export async function loadStartConfig(raw: NodeJS.ProcessEnv = process.env): Promise<Config> {
  const env = new Environment(raw);
  const config = serverConfig(env);
  const listeners = [
    { hostVariable: "HOST", host: config.host, portVariable: "PORT", port: config.port },
    ...(config.metrics ? [{ hostVariable: "METRICS_HOST", host: config.metrics.host, portVariable: "METRICS_PORT", port: config.metrics.port }] : []),
  ];
  for (const { hostVariable, host, portVariable, port } of listeners) {
    const why = await whyNotListenable(host);
    if (why !== undefined) env.invalid(hostVariable, `${hostVariable} "${host}" ${why}`);
    const whyPort = why === undefined ? await whyPortNotListenable(portVariable, hostVariable, host, port) : undefined;
    if (whyPort !== undefined) env.invalid(portVariable, whyPort);
  }
  env.done();
  return config;
}

function serverConfig(env: Environment): Config {
  const port = env.integer("PORT", 8080, 0, 65535);
  const baseUrl = env.value("BASE_URL");
  env.required("BASE_URL", baseUrl !== undefined, "without it listener URLs and the audience of webhook JWTs would name localhost");
  const tenantId = env.value("TENANT_ID") ?? "default";
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(tenantId)) env.invalid("TENANT_ID", `TENANT_ID must be 1-63 characters of [A-Za-z0-9._-]`);
  const fundCurrency = env.value("FUND_CURRENCY") ?? "USD";
  if (!/^[A-Z]{3}$/.test(fundCurrency)) env.invalid("FUND_CURRENCY", `FUND_CURRENCY must be an ISO 4217 code such as USD, got "${fundCurrency}"`);
  const leaseSeconds = env.integer("EXECUTION_LEASE_SECONDS", 60, 10, 86_400);
  return {
    port,
    host: env.value("HOST") ?? "0.0.0.0",
    baseUrl: env.url("BASE_URL", baseUrl ?? `http://localhost:${port}`),
    database: database(env),
    tenantId,
    fundCurrency,
    bootstrap: bootstrap(env),
    logLevel: env.oneOf("LOG_LEVEL", LOG_LEVELS, "info"),
    validateResponses: env.flag("VALIDATE_RESPONSES", !env.production),
    accessTokenTtlSeconds: env.integer("ACCESS_TOKEN_TTL_SECONDS", 900, 60, 86_400),
    signingKeyRotationDays: env.integer("SIGNING_KEY_ROTATION_DAYS", 90, 0, 3_650),
    secretsKey: secretsKeySource(env),
    migrateAtStart: env.flag("MIGRATE_AT_START", true),
    webhookSecretGraceSeconds: env.integer("WEBHOOK_SECRET_GRACE_SECONDS", 86_400, 0, 30 * 86_400),
    jwksAllowInsecure: env.flag("JWKS_ALLOW_INSECURE"),
    notificationAllowInsecure: env.flag("NOTIFICATION_ALLOW_INSECURE"),
    trustProxy: trustProxy(env),
    traceContextTrusted: traceContextTrusted(env),
    rateLimits: rateLimits(env),
    heapGrowthPercent: env.integer("HEAP_GROWTH_PERCENT", DEFAULT_HEAP_GROWTH_PERCENT, 0, 300),
    shutdown: shutdown(env),
    executionLeaseSeconds: leaseSeconds,
    executionWorkerRuns: env.integer("EXECUTION_WORKER_RUNS", 128, 1, 1_024),
    notifications: notifications(env, leaseSeconds),
    bulkRedrive: { perSecond: env.integer("BULK_REDRIVE_PER_SECOND", 20, 1, 10_000), maxPerCall: env.integer("BULK_REDRIVE_MAX_PER_CALL", 10_000, 1, 100_000) },
    metrics: metrics(env, port),
    executionRetention: executionRetention(env),
    auditRetentionDays: auditRetentionDays(env),
    tracing: tracing(env),
  };
}
