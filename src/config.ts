// All configuration, from the environment, typed and validated in one place. A bad value stops
// the process at start with a message naming the variable; secrets are never echoed back.
import { resolve } from "node:path";
import { DEFAULT_HEAP_GROWTH_PERCENT } from "./core/heap-growth.js";
import type { RateLimitQuotas, RateQuota } from "./core/rate-limiter.js";
import { parseTrustProxy } from "./webhooks/source-ip.js";

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

export interface Config {
  port: number;
  host: string;
  /** The tenant base URL: the `sub` of webhook JWTs and the prefix of listener URLs. */
  baseUrl: string;
  database: DatabaseConfig;
  tenantId: string;
  fundCurrency: string;
  bootstrap: { clientId: string; clientSecret: string } | null;
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

export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * The database, or the key, is not one this release may start with (its migrations, what it holds
 * sealed). Like a ConfigError it ends the process with exit code 2: restarting will not help.
 */
export class StartRefused extends Error {
  override name = "StartRefused";
}

/** Ends the process with exit code 2 and the message of a ConfigError or StartRefused (a process manager can be told not to restart on it); throws anything else on. */
export function exitRefused(e: unknown): never {
  if (e instanceof ConfigError) process.stderr.write(`configuration error: ${e.message}\n`);
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

const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function url(name: string, raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new ConfigError(`${name} must be an http(s) URL`);
  if (parsed.search || parsed.hash) throw new ConfigError(`${name} must not carry a query or fragment`);
  return parsed.toString().replace(/\/$/, "");
}

/** What is never made up under NODE_ENV=production, and what would be made up without it. */
const PRODUCTION_NEEDS = {
  DATABASE_URL: "DATABASE_URL must be set when NODE_ENV=production: without it the server would start on a new SQLite file of its own, with a new super-admin",
  BASE_URL: "BASE_URL must be set when NODE_ENV=production: without it listener URLs and the audience of webhook JWTs would name localhost",
  SECRETS_KEY: "SECRETS_KEY (or SECRETS_KEY_FILE) must be set when NODE_ENV=production: without it the server would make a key of its own, which opens none of the secrets sealed with the real one",
} as const;

function requireInProduction(env: NodeJS.ProcessEnv, name: keyof typeof PRODUCTION_NEEDS, given: boolean): void {
  if (env.NODE_ENV === "production" && !given) throw new ConfigError(PRODUCTION_NEEDS[name]);
}

/** Where the data lives: all `npm run migrate` reads of the configuration. */
export function loadDatabaseConfig(env: NodeJS.ProcessEnv = process.env): DatabaseConfig {
  const raw = env.DATABASE_URL;
  requireInProduction(env, "DATABASE_URL", Boolean(raw));
  const busyTimeoutMs = integer(env, "SQLITE_BUSY_TIMEOUT_MS", DATABASE_DEFAULTS.sqliteBusyTimeoutMs, 0, 600_000);
  if (!raw) return { kind: "sqlite", path: resolve("data/tenant.sqlite"), busyTimeoutMs };
  if (raw.startsWith("sqlite:")) {
    const path = raw.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "");
    if (!path) throw new ConfigError(`DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/tenant.sqlite`);
    return { kind: "sqlite", path: path === ":memory:" ? path : resolve(path), busyTimeoutMs };
  }
  if (/^postgres(ql)?:\/\//.test(raw)) {
    return {
      kind: "postgres",
      url: raw,
      // Two at least: the migrations at start hold one for their lock while they run on another.
      poolSize: integer(env, "DATABASE_POOL_SIZE", DATABASE_DEFAULTS.poolSize, 2, 1_000),
      poolTimeoutMs: integer(env, "DATABASE_POOL_TIMEOUT_MS", DATABASE_DEFAULTS.poolTimeoutMs, 1, 600_000),
      statementTimeoutMs: integer(env, "DATABASE_STATEMENT_TIMEOUT_MS", DATABASE_DEFAULTS.statementTimeoutMs, 0, 3_600_000),
      lockTimeoutMs: lockTimeout(env),
      queryTimeoutMs: integer(env, "DATABASE_QUERY_TIMEOUT_MS", DATABASE_DEFAULTS.queryTimeoutMs, 0, 3_600_000),
      idleInTransactionTimeoutMs: integer(env, "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", DATABASE_DEFAULTS.idleInTransactionTimeoutMs, 0, 3_600_000),
      keepAliveMs: keepAlive(env),
    };
  }
  throw new ConfigError(`DATABASE_URL must start with sqlite: or postgres://`);
}

/**
 * A lock wait ends before the statement does (0 for either: no bound of its own). Unset, the
 * default, or none when the statement timeout is no longer (it bounds the wait then).
 */
function lockTimeout(env: NodeJS.ProcessEnv): number {
  const statement = integer(env, "DATABASE_STATEMENT_TIMEOUT_MS", DATABASE_DEFAULTS.statementTimeoutMs, 0, 3_600_000);
  const fallback = statement > 0 && statement <= DATABASE_DEFAULTS.lockTimeoutMs ? 0 : DATABASE_DEFAULTS.lockTimeoutMs;
  const ms = integer(env, "DATABASE_LOCK_TIMEOUT_MS", fallback, 0, 3_600_000);
  if (ms > 0 && statement > 0 && ms >= statement) throw new ConfigError(`DATABASE_LOCK_TIMEOUT_MS (${ms}) must be less than DATABASE_STATEMENT_TIMEOUT_MS (${statement}), or 0`);
  return ms;
}

/** TCP counts keepalive's idle time in whole seconds: 0 (off) or a second at least. */
function keepAlive(env: NodeJS.ProcessEnv): number {
  const ms = integer(env, "DATABASE_KEEPALIVE_MS", DATABASE_DEFAULTS.keepAliveMs, 0, 3_600_000);
  if (ms > 0 && ms < 1_000) throw new ConfigError(`DATABASE_KEEPALIVE_MS must be 0 (off) or between 1000 and 3600000, got ${ms}`);
  return ms;
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback = false): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "0" || raw === "false") return false;
  if (raw === "1" || raw === "true") return true;
  throw new ConfigError(`${name} must be 1 (true) or 0 (false)`);
}

/** Where the key that seals secrets comes from (checked; a key file is read later, by loadSecretsKey). */
export function secretsKey(env: NodeJS.ProcessEnv): Config["secretsKey"] {
  const value = env.SECRETS_KEY;
  requireInProduction(env, "SECRETS_KEY", Boolean(value || env.SECRETS_KEY_FILE));
  if (value) {
    const key = Buffer.from(value, "base64url");
    if (key.length !== 32 || !/^[A-Za-z0-9_-]+$/.test(value)) throw new ConfigError(`SECRETS_KEY must be 32 bytes as base64url (43 characters)`);
    return { kind: "value", key };
  }
  return { kind: "file", path: resolve(env.SECRETS_KEY_FILE || "data/secrets.key"), create: env.NODE_ENV !== "production" };
}

/**
 * What `npm run rotate-signing-key` reads: the database and the secrets key. A missing key file is
 * never created there: a new key would seal a signing key that no instance opens.
 */
export function loadKeyCommandConfig(env: NodeJS.ProcessEnv = process.env): Pick<Config, "database" | "secretsKey"> {
  const database = loadDatabaseConfig(env);
  const source = secretsKey(env);
  return { database, secretsKey: source.kind === "file" ? { ...source, create: false } : source };
}

function trustProxy(raw: string | undefined): string[] {
  try {
    return parseTrustProxy(raw);
  } catch (e) {
    throw new ConfigError(e instanceof Error ? e.message : String(e));
  }
}

/** Unset: null, for TRUST_PROXY's proxies (the context of their clients comes through them); `none`: no peer. */
function traceContextTrusted(raw: string | undefined): string[] | null {
  if (raw === undefined || raw === "") return null;
  if (raw.trim() === "none") return [];
  try {
    return parseTrustProxy(raw, "TRACE_CONTEXT_TRUSTED");
  } catch (e) {
    throw new ConfigError(e instanceof Error ? e.message : String(e));
  }
}

/**
 * The defaults: a steady 200, 100 and 200 requests a second, and a minute's worth at once; a
 * sender's failed authentications on a listener, one a second and 60 at once.
 */
export const RATE_LIMIT_DEFAULTS = { source: "12000/60", credential: "6000/60", listener: "12000/60", "listener-failures": "60/60" } as const;

/** `<requests>/<seconds>` (e.g. 6000/60: 6,000 requests a minute), or `off`. */
function rateQuota(env: NodeJS.ProcessEnv, name: string, fallback: string): RateQuota | null {
  const raw = env[name] || fallback;
  if (raw === "off") return null;
  const match = /^([0-9]{1,7})\/([0-9]{1,5})$/.exec(raw);
  const quota = Number(match?.[1]);
  const windowSeconds = Number(match?.[2]);
  if (!match || quota < 1 || quota > 1_000_000 || windowSeconds < 1 || windowSeconds > 86_400) {
    throw new ConfigError(`${name} must be <requests>/<seconds> (1 to 1000000 requests, 1 to 86400 seconds, e.g. ${fallback}) or off, got "${raw}"`);
  }
  return { quota, windowSeconds };
}

function rateLimits(env: NodeJS.ProcessEnv): RateLimitQuotas {
  const master = env.RATE_LIMIT || "on";
  if (master !== "on" && master !== "off") throw new ConfigError(`RATE_LIMIT must be on or off, got "${master}"`);
  const quotas = {
    source: rateQuota(env, "RATE_LIMIT_SOURCE", RATE_LIMIT_DEFAULTS.source),
    credential: rateQuota(env, "RATE_LIMIT_CREDENTIAL", RATE_LIMIT_DEFAULTS.credential),
    listener: rateQuota(env, "RATE_LIMIT_LISTENER", RATE_LIMIT_DEFAULTS.listener),
    "listener-failures": rateQuota(env, "RATE_LIMIT_LISTENER_FAILURES", RATE_LIMIT_DEFAULTS["listener-failures"]),
  };
  return master === "off" ? { source: null, credential: null, listener: null, "listener-failures": null } : quotas;
}

/** The drain ends before the deadline, so that requests arriving in the drain's last moment may still finish. */
function shutdown(env: NodeJS.ProcessEnv): Config["shutdown"] {
  const drainSeconds = integer(env, "SHUTDOWN_DRAIN_SECONDS", 5, 0, 300);
  const timeoutSeconds = integer(env, "SHUTDOWN_TIMEOUT_SECONDS", 25, 1, 3_600);
  if (drainSeconds >= timeoutSeconds) throw new ConfigError(`SHUTDOWN_DRAIN_SECONDS (${drainSeconds}) must be less than SHUTDOWN_TIMEOUT_SECONDS (${timeoutSeconds})`);
  return { drainSeconds, timeoutSeconds };
}

/**
 * Traces are on when an OTLP endpoint is set, as in every OpenTelemetry SDK. The variables are the
 * standard ones; those that decide what is exported and kept are checked here, so that a typo stops
 * the start instead of falling back to the SDK's default (which keeps every trace).
 */
function tracing(env: NodeJS.ProcessEnv): TracingConfig | null {
  const tracesEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if ((!tracesEndpoint && !endpoint) || env.OTEL_SDK_DISABLED?.toLowerCase() === "true") return null;
  const collector = tracesEndpoint ? url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracesEndpoint) : `${url("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint!)}/v1/traces`;
  const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = oneOf(env, protocolVariable, TRACE_PROTOCOLS, "http/protobuf");
  const sampler = oneOf(env, "OTEL_TRACES_SAMPLER", TRACE_SAMPLERS, "parentbased_always_on");
  return {
    url: collector,
    protocol,
    sampler,
    ratio: sampler.endsWith("traceidratio") ? samplerRatio(env.OTEL_TRACES_SAMPLER_ARG) : 1,
    batchDelayMs: integer(env, "OTEL_BSP_SCHEDULE_DELAY", 200, 1, 3_600_000),
  };
}

function samplerRatio(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 1;
  const ratio = Number(raw);
  if (!/^[0-9.eE+-]+$/.test(raw) || !(ratio >= 0 && ratio <= 1)) throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (the share of new traces kept), got "${raw}"`);
  return ratio;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join(", ")}, got "${raw}"`);
  return raw as T;
}

/** Off unless METRICS_PORT is set; never on the API's port, so that the API's clients cannot read it. */
function metrics(env: NodeJS.ProcessEnv, apiPort: number): Config["metrics"] {
  if (!env.METRICS_PORT) return null;
  const port = integer(env, "METRICS_PORT", 0, 1, 65535);
  if (port === apiPort) throw new ConfigError(`METRICS_PORT must differ from PORT (${apiPort}): the metrics have a listener of their own`);
  return { port, host: env.METRICS_HOST || "127.0.0.1" };
}

/**
 * At least the 7 days webhook event records are kept: an event in the delivery log names its
 * execution, which the age alone never removes before it. Never off: storage would grow for ever.
 * The count is off unless set.
 */
function executionRetention(env: NodeJS.ProcessEnv): Config["executionRetention"] {
  const count = env.EXECUTION_RETENTION_COUNT;
  const off = count === undefined || count === "" || count === "off";
  const max = 100_000_000;
  if (!off && !(/^[0-9]+$/.test(count) && Number(count) >= 1 && Number(count) <= max)) {
    throw new ConfigError(`EXECUTION_RETENTION_COUNT must be off or an integer between 1 and ${max}, got "${count}"`);
  }
  return {
    days: integer(env, "EXECUTION_RETENTION_DAYS", 30, 7, 3_650),
    count: off ? null : Number(count),
    sweepSeconds: integer(env, "EXECUTION_RETENTION_SWEEP_SECONDS", 60, 1, 86_400),
  };
}

/** Kept unless set: an audit trail is evidence, and how long it must be kept is the operator's compliance decision. */
function auditRetentionDays(env: NodeJS.ProcessEnv): number | null {
  const raw = env.AUDIT_RETENTION_DAYS;
  return raw === undefined || raw === "" || raw === "kept" ? null : integer(env, "AUDIT_RETENTION_DAYS", 0, 30, 36_500);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, "PORT", 8080, 0, 65535);
  const host = env.HOST || "0.0.0.0";
  requireInProduction(env, "BASE_URL", Boolean(env.BASE_URL));
  const baseUrl = url("BASE_URL", env.BASE_URL || `http://localhost:${port}`);
  const tenantId = env.TENANT_ID || "default";
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(tenantId)) throw new ConfigError(`TENANT_ID must be 1-63 characters of [A-Za-z0-9._-]`);
  const fundCurrency = env.FUND_CURRENCY || "USD";
  if (!/^[A-Z]{3}$/.test(fundCurrency)) throw new ConfigError(`FUND_CURRENCY must be an ISO 4217 code such as USD, got "${fundCurrency}"`);
  const clientId = env.BOOTSTRAP_CLIENT_ID;
  const clientSecret = env.BOOTSTRAP_CLIENT_SECRET;
  if (Boolean(clientId) !== Boolean(clientSecret)) throw new ConfigError(`BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET go together`);
  if (clientId && !/^[A-Za-z0-9._-]{3,128}$/.test(clientId)) throw new ConfigError(`BOOTSTRAP_CLIENT_ID must be 3-128 characters of [A-Za-z0-9._-]`);
  if (clientSecret && (clientSecret.length < 16 || clientSecret.length > 256)) throw new ConfigError(`BOOTSTRAP_CLIENT_SECRET must be 16 to 256 characters`);
  const logLevel = (env.LOG_LEVEL || "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}`);
  return {
    port,
    host,
    baseUrl,
    database: loadDatabaseConfig(env),
    tenantId,
    fundCurrency,
    bootstrap: clientId && clientSecret ? { clientId, clientSecret } : null,
    logLevel,
    validateResponses: flag(env, "VALIDATE_RESPONSES", env.NODE_ENV !== "production"),
    accessTokenTtlSeconds: integer(env, "ACCESS_TOKEN_TTL_SECONDS", 900, 60, 86_400),
    signingKeyRotationDays: integer(env, "SIGNING_KEY_ROTATION_DAYS", 90, 0, 3_650),
    secretsKey: secretsKey(env),
    migrateAtStart: flag(env, "MIGRATE_AT_START", true),
    webhookSecretGraceSeconds: integer(env, "WEBHOOK_SECRET_GRACE_SECONDS", 86_400, 0, 30 * 86_400),
    jwksAllowInsecure: flag(env, "JWKS_ALLOW_INSECURE"),
    notificationAllowInsecure: flag(env, "NOTIFICATION_ALLOW_INSECURE"),
    trustProxy: trustProxy(env.TRUST_PROXY),
    traceContextTrusted: traceContextTrusted(env.TRACE_CONTEXT_TRUSTED),
    rateLimits: rateLimits(env),
    heapGrowthPercent: integer(env, "HEAP_GROWTH_PERCENT", DEFAULT_HEAP_GROWTH_PERCENT, 0, 300),
    shutdown: shutdown(env),
    executionLeaseSeconds: integer(env, "EXECUTION_LEASE_SECONDS", 60, 10, 86_400),
    metrics: metrics(env, port),
    executionRetention: executionRetention(env),
    auditRetentionDays: auditRetentionDays(env),
    tracing: tracing(env),
  };
}
