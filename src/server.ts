// The composition root: opens storage, builds the services, binds handlers, and serves HTTP.
// Tests start it in-process on an ephemeral port with a clock they control; main.ts starts it for real.
import type { AddressInfo } from "node:net";
import { DATABASE_DEFAULTS, type Config } from "./config.js";
import { BackgroundTask } from "./core/background-task.js";
import { systemClock, type Clock } from "./core/clock.js";
import { boundAddress } from "./core/listen-address.js";
import { createLogger, type Logger } from "./core/logger.js";
import { consoleDir, contractPath, docsPath } from "./core/package-root.js";
import { PageTokens } from "./core/pagination.js";
import { unreadyReasons } from "./core/readiness.js";
import { AppCaps } from "./funds/app-caps.js";
import { EffectiveLimits } from "./funds/effective.js";
import { FundPolicies } from "./funds/fund-policy.js";
import { SpendAuthorizations } from "./funds/spends/spend-authorizations.js";
import { SpendList } from "./funds/spends/spend-list.js";
import { SubjectAppLimits } from "./funds/subject-app-limits.js";
import { answerClientErrors } from "./http/client-error.js";
import { createApp } from "./http/app.js";
import { Connections, type UnfinishedRequest } from "./http/connections.js";
import { apiConnectionCap, openFileLimit, reportRefusedConnections } from "./http/refused-connections.js";
import { Idempotency } from "./http/idempotency.js";
import { LockShedding } from "./http/lock-shedding.js";
import { RateLimits } from "./http/rate-limit.js";
import { fundsHandlers } from "./http/handlers/fund-handlers.js";
import { spendHandlers, spendKeptReferences } from "./http/handlers/spend-handlers.js";
import { identityHandlers } from "./http/handlers/identity-handlers.js";
import { automationHandlers } from "./http/handlers/automation-handlers.js";
import { auditHandlers } from "./http/handlers/audit-handlers.js";
import { AuditTrail } from "./audit/audit-trail.js";
import { moveAuditInbox } from "./audit/audit-inbox.js";
import { pruneAuditEvents } from "./audit/audit-retention.js";
import { AccessTokens } from "./identity/access-tokens.js";
import { bootstrapAdmin } from "./identity/bootstrap.js";
import { ClientCredentialsGrant } from "./identity/client-credentials-grant.js";
import { Credentials } from "./identity/credentials.js";
import { FailureThrottle } from "./identity/failure-throttle.js";
import { SigningKeys, SIGNING_KEYS_RELOAD_MS } from "./identity/signing-keys.js";
import { Users } from "./identity/users.js";
import { Automations } from "./automations/automations.js";
import { workerHandOff } from "./automations/event-hand-off.js";
import { ExecutionReruns } from "./automations/reruns.js";
import { ExecutionRetention, RETENTION_PACE, type RetentionPace } from "./automations/execution-retention.js";
import { Executions } from "./automations/executions.js";
import { FundTriggers } from "./automations/fund-triggers.js";
import { NotificationSecrets } from "./automations/notification-secrets.js";
import { deliveryTotalMs, DELIVERY_DEFAULTS, Notifier, type DeliveryBounds } from "./automations/notify.js";
import { ExecutionRunner } from "./automations/runner.js";
import { Worker, WORKER_DEFAULTS } from "./automations/worker.js";
import { Metrics } from "./metrics/metrics.js";
import { currentBuild } from "./metrics/process-metrics.js";
import { BackgroundFailures } from "./storage/background-failures.js";
import { ChangeWatch, type PollTiming } from "./storage/change-versions.js";
import { openStorage, type Storage } from "./storage/connect.js";
import { IdempotencyRecords } from "./storage/idempotency-records.js";
import { LiveInstances } from "./storage/live-instances.js";
import { DatabaseReachability } from "./storage/reachability.js";
import { checkSealedSecrets } from "./sealed-secrets.js";
import { loadSecretsKey } from "./storage/secrets-key.js";
import { WebhookEvents } from "./webhooks/events.js";
import { WebhookIntake } from "./webhooks/intake.js";
import { JwksCache } from "./webhooks/jwks-cache.js";
import type { FetchJwksOptions } from "./webhooks/jwks-fetch.js";
import type { OutboundOptions } from "./webhooks/outbound-request.js";
import { Listeners } from "./webhooks/listeners.js";
import { SecretBox } from "./webhooks/secret-box.js";
import { sharedKey } from "./storage/settings.js";
import { startTracing } from "./tracing/start.js";

/** How often expired Idempotency-Key records are removed (an expired one is also replaced when its key comes again). */
const IDEMPOTENCY_SWEEP_MS = 10 * 60_000;
/** How often audit events past AUDIT_RETENTION_DAYS are removed, when it is set. */
const AUDIT_SWEEP_MS = 10 * 60_000;

/**
 * How often, on SQLite, the audit inbox is moved into the trail (src/audit/audit-inbox.ts): often
 * enough to keep the inbox, which lists read whole, small; seldom enough that a move's batch shares
 * the index pages of many events.
 */
const AUDIT_INBOX_MOVE_MS = 1_000;

/** How often the firings of usage thresholds in windows that ended (an hour ago at least) are removed. */
const FIRINGS_SWEEP_MS = 60 * 60_000;

/**
 * How often the database is pinged, and how long a ping's `select 1` may take once it has a
 * connection: milliseconds when the database answers at all (on PostgreSQL the wait for a
 * connection, up to DATABASE_POOL_TIMEOUT_MS, comes on top).
 */
const DATABASE_PING = { intervalMs: 1_000, timeoutMs: 2_000 };

export interface ServerOptions {
  config: Config;
  clock?: Clock;
  logger?: Logger;
  /** How JWKS are fetched, beyond the configuration (tests: a DNS resolver, a CA, a stand-in public host). */
  jwksFetch?: Omit<FetchJwksOptions, "allowInsecure">;
  /** How `notify` steps call out, beyond the configuration (tests: a DNS resolver, a CA, shorter bounds). */
  notifications?: Omit<OutboundOptions, "allowInsecure"> & { bounds?: Partial<DeliveryBounds> };
  /** How often the cached principals' version is polled (tests: rarely, to single out this instance's own invalidation). */
  principalsPoll?: PollTiming;
  /** The same for the kept fund policy. */
  fundPolicyPoll?: PollTiming;
  /** The same for the kept webhook listeners. */
  listenersPoll?: PollTiming;
  /** The same for the kept fund-event triggers. */
  fundTriggersPoll?: PollTiming;
  /** How long the execution worker may make no progress while runs are due before readiness calls it stuck (tests: short). */
  workerStuckMs?: number;
  /** How often the signing keys are read again, rotated when due and retired (tests: often). */
  signingKeysReloadMs?: number;
  /** How the sweep of executions past their retention goes, beyond the configuration (tests: small batches). */
  retentionPace?: Partial<RetentionPace>;
  /** How often the audit inbox is moved into the trail on SQLite (tests: often, or never). */
  auditInboxMoveMs?: number;
}

export interface RunningServer {
  /** Where it is reached from this machine, e.g. http://127.0.0.1:8080 (a loopback address when it listens on every address). */
  url: string;
  /** The address and port it listens on, e.g. 0.0.0.0:8080. */
  listening: string;
  /** The execution worker of this process (tests wait for it to be idle). */
  worker: Worker;
  /** Where Prometheus scrapes this server (`GET /metrics` on METRICS_PORT), from this machine; absent when metrics are off. */
  metricsUrl?: string;
  /** The address and port the metrics listener listens on; absent when metrics are off. */
  metricsListening?: string;
  /** The sweep of this process that removes executions past their retention (tests run it when they choose). */
  retention: ExecutionRetention;
  /**
   * Stops, as on SIGTERM: /readyz answers 503 at once, every connection is closed after its next
   * answer, and the worker releases what it has not begun; after `drainMs` (time for a load balancer
   * to notice) the listener stops and idle connections are closed; once the requests and runs under
   * way have finished, the database is closed. The caller bounds it in time (main.ts).
   */
  close(drainMs?: number): Promise<void>;
  /** What `close` is still waiting for (the log names it when a shutdown is cut short). */
  unfinished(): { requests: UnfinishedRequest[]; arriving: number; executions: string[] };
}

/** PostgreSQL with a lock_timeout: what sheds the operations whose table is locked while their waits starve the pool (http/lock-shedding.ts). */
function lockShedding(database: Config["database"], storage: Storage, logger: Logger): LockShedding | undefined {
  if (database.kind !== "postgres") return undefined;
  const holdMs = database.lockTimeoutMs ?? DATABASE_DEFAULTS.lockTimeoutMs;
  return holdMs > 0 ? new LockShedding({ holdMs, poolShort: () => (storage.poolCounts?.().waiting ?? 0) > 0, logger }) : undefined;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const metrics = config.metrics ? new Metrics(config.metrics, config.database.kind, await currentBuild()) : undefined;
  const storage = await openStorage(config.database, {
    migrate: config.migrateAtStart,
    observer: metrics?.database,
    migrations: {
      onApplied: (migration) => logger.info({ msg: "migration applied", migration }),
      onRetry: ({ step, attempt, attempts, cause, pauseMs }) => logger.warn({ msg: "migration did not get its locks: trying again", migration: step, cause, attempt, attempts, pauseMs }),
    },
  });
  let secretsKey: Buffer;
  try {
    secretsKey = loadSecretsKey(config.secretsKey);
    await checkSealedSecrets(storage, new SecretBox(secretsKey), config.secretsKey);
  } catch (e) {
    await storage.close();
    throw e;
  }

  const pageTokens = new PageTokens(await sharedKey(storage, "page_token_key"));
  const users = new Users(storage, clock, pageTokens);
  // Revocations and role changes, made by any instance, reach this one's cached principals.
  const principals = new ChangeWatch(storage, "principals", logger, options.principalsPoll);
  await principals.start();
  const credentials = new Credentials(storage, clock, users, pageTokens, principals);
  const signingKeys = await SigningKeys.load(storage, new SecretBox(secretsKey), clock, { tokenTtlSeconds: config.accessTokenTtlSeconds, rotationDays: config.signingKeyRotationDays });
  const accessTokens = new AccessTokens(
    storage,
    signingKeys,
    clock,
    { issuer: config.baseUrl, ttlSeconds: config.accessTokenTtlSeconds },
    principals,
  );
  const grant = new ClientCredentialsGrant(credentials, accessTokens, new FailureThrottle(storage, clock));
  await bootstrapAdmin(storage, users, credentials, config.bootstrap, logger);

  // Policy updates, made by any instance, reach this one's kept policy.
  const fundPolicyChanges = new ChangeWatch(storage, "fund_policy", logger, options.fundPolicyPoll);
  await fundPolicyChanges.start();
  const policy = new FundPolicies(storage, clock, config.tenantId, fundPolicyChanges);
  await policy.ensure(config.fundCurrency);
  // Automations' saves, made by any instance, reach this one's kept fund-event triggers.
  const fundTriggerChanges = new ChangeWatch(storage, "fund_triggers", logger, options.fundTriggersPoll);
  await fundTriggerChanges.start();
  const fundTriggers = new FundTriggers(storage, clock, fundTriggerChanges, logger);
  await fundTriggers.load();
  const limits = new SubjectAppLimits(storage, clock, users, policy, pageTokens, config.tenantId, fundTriggers);
  const caps = new AppCaps(storage, clock, policy, pageTokens, config.tenantId);
  const effective = new EffectiveLimits(storage, clock, policy);
  const spends = new SpendAuthorizations(storage, clock, effective, metrics?.spends, fundTriggers);
  const spendList = new SpendList(storage, clock, pageTokens);

  // Automations' updates, deletions and secret rotations, made by any instance, reach this one's kept listeners.
  const listenerChanges = new ChangeWatch(storage, "listeners", logger, options.listenersPoll);
  await listenerChanges.start();
  const listeners = new Listeners(storage, clock, new SecretBox(secretsKey), config.webhookSecretGraceSeconds, listenerChanges);
  const notificationSecrets = new NotificationSecrets(clock, new SecretBox(secretsKey), config.webhookSecretGraceSeconds);
  const automations = new Automations(storage, clock, listeners, policy, pageTokens, notificationSecrets, {
    baseUrl: config.baseUrl,
    allowInsecureJwks: config.jwksAllowInsecure,
    allowInsecureNotifications: config.notificationAllowInsecure,
  }, fundTriggers);
  const { bounds, ...notificationFetch } = options.notifications ?? {};
  const notifier = new Notifier(clock, {
    ...notificationFetch,
    allowInsecure: config.notificationAllowInsecure,
    // Well within the lease: a run that retries a notification keeps its execution.
    bounds: { ...DELIVERY_DEFAULTS, ...bounds, totalMs: deliveryTotalMs(config.executionLeaseSeconds * 1000, bounds?.totalMs) },
  });
  const executions = new Executions(storage, pageTokens);
  const events = new WebhookEvents(storage, clock, pageTokens);
  const worker = new Worker(
    { storage, clock, events, logger, runner: new ExecutionRunner({ storage, clock, limits, logger, notifier, notificationSecrets, observer: metrics?.executions, fundTriggers }) },
    { ...WORKER_DEFAULTS, leaseMs: config.executionLeaseSeconds * 1000, stuckMs: options.workerStuckMs ?? config.executionLeaseSeconds * 1000 },
  );
  fundTriggers.attach(worker);
  const poolWaitMs = config.database.kind === "postgres" ? (config.database.poolTimeoutMs ?? DATABASE_DEFAULTS.poolTimeoutMs) : 0;
  const reachability = new DatabaseReachability(storage, logger, { ...DATABASE_PING, timeoutMs: DATABASE_PING.timeoutMs + poolWaitMs });
  const intake = new WebhookIntake({
    clock,
    listeners,
    events,
    jwks: new JwksCache({ clock, fetchOptions: { ...options.jwksFetch, allowInsecure: config.jwksAllowInsecure } }),
    baseUrl: config.baseUrl,
    trustProxy: config.trustProxy,
    // This process's worker: handed a new execution it claimed at insert, or woken to claim it.
    handOff: workerHandOff(worker),
  });
  // Redrives and replays are handed to the same worker, as the intake's executions are.
  const reruns = new ExecutionReruns({ storage, clock, events, handOff: workerHandOff(worker) });

  // Each instance enforces its share of the limits: the quota over the instances counted live.
  const instances = new LiveInstances(storage, clock, logger);
  const rateLimits = new RateLimits(config.rateLimits, clock, () => instances.count, config.trustProxy);
  if (rateLimits.active) await instances.start();

  // A box of its own: replayed answers do not take the places of webhook secrets in its cache of opened secrets.
  const idempotencyRecords = new IdempotencyRecords(storage, clock);
  // OTEL_*: off unless an OTLP endpoint is set (then OpenTelemetry is loaded, and spans are exported
  // until `close`). Before the app is made: it adds its request spans only when traces are on.
  const tracing = await startTracing(config.tracing, logger);
  let stopping = false;
  const app = createApp({
    logger,
    idempotency: new Idempotency(idempotencyRecords, new SecretBox(secretsKey), spendKeptReferences(spends)),
    rateLimits,
    accessTokens,
    contractPath,
    docsPath,
    consoleDir,
    validateResponses: config.validateResponses,
    traceContextTrusted: config.traceContextTrusted ?? config.trustProxy,
    lockShedding: lockShedding(config.database, storage, logger),
    requestObservers: metrics?.requestObservers,
    unready: async () => unreadyReasons(await reachability.check(), worker.stuck()),
    stopping: () => stopping,
    handlers: {
      ...identityHandlers({ grant, users, credentials, trustProxy: config.trustProxy }),
      ...fundsHandlers({ limits, caps, policy, effective }),
      ...spendHandlers({ spends, list: spendList }),
      ...automationHandlers({ automations, executions, reruns, events, intake }),
      ...auditHandlers({ audit: new AuditTrail(storage, pageTokens) }),
    },
  });

  const connections = new Connections(app);
  const { server } = connections;
  answerClientErrors(server, logger, metrics && ((reason) => metrics.http.parserRefused(reason)));
  // Idle keep-alive connections are closed by the client or the load balancer first (their idle
  // timeouts are shorter: undici 4 s, common balancers 60 s): a server that closes first races a
  // request being sent on the same connection, which the client sees as ECONNRESET.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // The whole request, body included (Node's default, stated: the contract names it for 408).
  server.requestTimeout = 300_000;
  // Every header field is kept, none dropped past a count; limitHeaderFields refuses too many.
  server.maxHeadersCount = 0;
  // First: a metrics port that is taken stops the start before the API takes any traffic.
  let scrapes: Awaited<ReturnType<Metrics["listen"]>> | undefined;
  try {
    scrapes = await metrics?.listen({
      storage,
      clock,
      runs: () => worker.runs(),
      reasons: () => unreadyReasons(reachability.reachableAtLastPing(), worker.stuck()),
      stopping: () => stopping,
      unansweredMs: () => reachability.unansweredMs(),
      stalledMs: () => worker.stalledMs(),
    }, logger);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (e) {
    // A start that fails here leaves nothing running: in a process that goes on (a test, an
    // embedding), neither traces nor the polls nor the database of a server that never served.
    await scrapes?.close();
    for (const watch of [principals, fundPolicyChanges, fundTriggerChanges, listenerChanges]) await watch.stop();
    await instances.stop();
    await tracing?.stop();
    await storage.close();
    throw e;
  }
  // Connections up to a cap below the open-file limit: the database's pool and the process's own files keep theirs.
  const poolSize = config.database.kind === "postgres" ? (config.database.poolSize ?? DATABASE_DEFAULTS.poolSize) : 0;
  reportRefusedConnections(server, "api", apiConnectionCap(openFileLimit(), poolSize), logger, metrics?.http);
  worker.start();
  reachability.start();
  /** A task run every `intervalMs` in the background, its failures logged once per run of them (storage/background-failures.ts). */
  const repeated = <T>(intervalMs: number, task: string, run: () => Promise<T>, then: (result: T) => void) => {
    const failures = new BackgroundFailures(logger, task);
    return new BackgroundTask(intervalMs, () => failures.attempt(run, then));
  };
  const sweep = repeated(IDEMPOTENCY_SWEEP_MS, "idempotency record sweep", () => idempotencyRecords.sweep(), (removed) => void (removed > 0 && logger.info({ msg: "swept idempotency records", removed })));
  sweep.start();
  const { auditRetentionDays } = config;
  const auditSweep =
    auditRetentionDays === null
      ? undefined
      : repeated(AUDIT_SWEEP_MS, "audit event sweep", () => pruneAuditEvents(storage, clock, auditRetentionDays), (removed) => void (removed > 0 && logger.info({ msg: "swept audit events", removed })));
  auditSweep?.start();
  const auditInbox =
    storage.dialect === "sqlite"
      ? repeated(options.auditInboxMoveMs ?? AUDIT_INBOX_MOVE_MS, "audit inbox move", () => moveAuditInbox(storage), ({ moved, caughtUp }) => metrics?.database.auditInboxMoved(moved, caughtUp, clock.now()))
      : undefined;
  auditInbox?.start();
  // A threshold's firing is needed only while its window can still have spends decided in it.
  const firingsSweep = repeated(
    FIRINGS_SWEEP_MS,
    "fund threshold firing sweep",
    () => fundTriggers.sweep(new Date(clock.now() - FIRINGS_SWEEP_MS).toISOString()),
    (removed) => void (removed > 0 && logger.info({ msg: "swept fund threshold firings of ended windows", removed })),
  );
  firingsSweep.start();
  const keyUpkeep = repeated(options.signingKeysReloadMs ?? SIGNING_KEYS_RELOAD_MS, "signing key upkeep", () => signingKeys.maintain(), ({ rotated, retired }) => {
    if (rotated) logger.info({ msg: "signing key rotated", kid: rotated });
    if (retired.length > 0) logger.info({ msg: "signing keys retired", kids: retired });
  });
  keyUpkeep.start();
  const { days, count, sweepSeconds } = config.executionRetention;
  const retention = new ExecutionRetention({ storage, clock, logger }, { days, count }, { ...RETENTION_PACE, intervalMs: sweepSeconds * 1000, ...options.retentionPace });
  retention.start();
  const bound = boundAddress(server.address() as AddressInfo);

  let closing: Promise<void> | undefined;
  const close = (drainMs = 0) =>
    (closing ??= (async () => {
      stopping = true;
      connections.closeAfterAnswers();
      void worker.stop();
      // A sweep under way ends after its current batch.
      void retention.stop();
      await new Promise((resolve) => setTimeout(resolve, drainMs));
      await connections.stop();
      // Again: the releases of executions whose records committed since the first call.
      await worker.stop();
      await sweep.stop();
      await auditSweep?.stop();
      await auditInbox?.stop();
      await firingsSweep.stop();
      await keyUpkeep.stop();
      await retention.stop();
      await reachability.stop();
      await instances.stop();
      await principals.stop();
      await fundPolicyChanges.stop();
      await listenerChanges.stop();
      await fundTriggerChanges.stop();
      await scrapes?.close();
      await storage.close();
      // Last: the spans of everything above, exported within a bound of their own (tracing/start.ts).
      await tracing?.stop();
    })());

  const unfinished = () => ({ ...connections.unfinished(), executions: worker.runs() });
  return { ...bound, worker, retention, close, unfinished, ...(scrapes ? { metricsUrl: scrapes.url, metricsListening: scrapes.listening } : {}) };
}
