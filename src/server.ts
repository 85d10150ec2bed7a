// The composition root: opens storage, builds the services, binds handlers, and serves HTTP.
// Tests start it in-process on an ephemeral port with a clock they control; main.ts starts it for real.
import type { AddressInfo } from "node:net";
import { DATABASE_DEFAULTS, type Config } from "./config.js";
import { systemClock, type Clock } from "./core/clock.js";
import { boundAddress } from "./core/listen-address.js";
import { createLogger, type Logger } from "./core/logger.js";
import { consoleDir, contractPath, docsPath } from "./core/package-root.js";
import { PageTokens } from "./core/pagination.js";
import { StopList } from "./core/stop-list.js";
import { unreadyReasons } from "./core/readiness.js";
import { AppCaps } from "./funds/app-caps.js";
import { EffectiveLimits } from "./funds/effective.js";
import { FundPolicies } from "./funds/fund-policy.js";
import { SpendAuthorizations } from "./funds/spends/spend-authorizations.js";
import { SpendList } from "./funds/spends/spend-list.js";
import { SubjectAppLimits } from "./funds/subject-app-limits.js";
import { listenApi } from "./http/api-listener.js";
import { createApp } from "./http/app.js";
import type { UnfinishedRequest } from "./http/connections.js";
import { Idempotency } from "./http/idempotency.js";
import { lockSheddingFor } from "./http/lock-shedding.js";
import { RateLimits } from "./http/rate-limit.js";
import { fundsHandlers } from "./http/handlers/fund-handlers.js";
import { spendHandlers, spendKeptReferences } from "./http/handlers/spend-handlers.js";
import { identityHandlers } from "./http/handlers/identity-handlers.js";
import { automationHandlers } from "./http/handlers/automation-handlers.js";
import { auditHandlers } from "./http/handlers/audit-handlers.js";
import type { InboxMove } from "./audit/audit-inbox.js";
import { AuditTrail } from "./audit/audit-trail.js";
import { startAuditUpkeep } from "./audit/audit-upkeep.js";
import { identityServices } from "./identity/identity-services.js";
import { startKeyUpkeep } from "./identity/signing-keys.js";
import { automationServices } from "./automations/automation-services.js";
import { workerHandOff } from "./automations/event-hand-off.js";
import { ExecutionRetention, RETENTION_PACE, type RetentionPace } from "./automations/execution-retention.js";
import { FundTriggers, startFiringsSweep } from "./automations/fund-triggers.js";
import type { DeliveryBounds } from "./automations/notify.js";
import type { Worker } from "./automations/worker.js";
import { Metrics } from "./metrics/metrics.js";
import { currentBuild } from "./metrics/process-metrics.js";
import { ChangeWatch, type ChangeKind, type PollTiming } from "./storage/change-versions.js";
import { openStorage } from "./storage/connect.js";
import { loggedMigrations } from "./storage/migrate-up.js";
import { IdempotencyRecords, startIdempotencySweep } from "./storage/idempotency-records.js";
import { LiveInstances } from "./storage/live-instances.js";
import { DatabaseReachability, pingTiming } from "./storage/reachability.js";
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

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const stops = new StopList();
  try {
    return await start(options, clock, logger, stops);
  } catch (e) {
    // A start that fails leaves nothing running: in a process that goes on (a test, an embedding),
    // neither traces nor the polls nor the database of a server that never served.
    await stops.stopAll();
    throw e;
  }
}

async function start(options: ServerOptions, clock: Clock, logger: Logger, stops: StopList): Promise<RunningServer> {
  const { config } = options;
  // OTEL_*: off unless an OTLP endpoint is set (then OpenTelemetry is loaded, and spans are exported
  // until the very end of `close`: the spans of every stop are exported, within a bound of their own).
  const tracing = await startTracing(config.tracing, logger);
  if (tracing) stops.add(() => tracing.stop());
  const metrics = config.metrics ? new Metrics(config.metrics, config.database.kind, await currentBuild()) : undefined;
  const storage = await openStorage(config.database, {
    migrate: config.migrateAtStart,
    observer: metrics?.database,
    migrations: loggedMigrations(logger),
  });
  stops.add(() => storage.close());
  const secretsKey = loadSecretsKey(config.secretsKey);
  /** A box of its own for each room: one's opened secrets do not take the places of another's in its cache. */
  const box = () => new SecretBox(secretsKey);
  await checkSealedSecrets(storage, box(), config.secretsKey);
  /** A cache of this instance kept current with the changes of every instance (storage/change-versions.ts). */
  const watch = async (kind: ChangeKind, poll: PollTiming | undefined) => stops.started(await ChangeWatch.started(storage, kind, logger, poll));

  const pageTokens = new PageTokens(await sharedKey(storage, "page_token_key"));
  // Revocations and role changes, made by any instance, reach this one's cached principals.
  const principals = await watch("principals", options.principalsPoll);
  const { users, credentials, signingKeys, accessTokens, grant } = await identityServices({ storage, clock, logger, pageTokens, box: box(), config, principals });

  const policy = new FundPolicies(storage, clock, config.tenantId, await watch("fund_policy", options.fundPolicyPoll));
  await policy.ensure(config.fundCurrency);
  const fundTriggers = new FundTriggers(storage, clock, await watch("fund_triggers", options.fundTriggersPoll), logger);
  await fundTriggers.load();
  const limits = new SubjectAppLimits(storage, clock, users, policy, pageTokens, config.tenantId, fundTriggers);
  const caps = new AppCaps(storage, clock, policy, pageTokens, config.tenantId);
  const effective = new EffectiveLimits(storage, clock, policy);
  const spends = new SpendAuthorizations(storage, clock, effective, metrics?.spends, fundTriggers);

  const listeners = new Listeners(storage, clock, box(), config.webhookSecretGraceSeconds, await watch("listeners", options.listenersPoll));
  const events = new WebhookEvents(storage, clock, pageTokens);
  const { automations, worker, executions, reruns } = automationServices({
    ...{ storage, clock, logger, pageTokens, box: box(), listeners, events, policy, limits, fundTriggers, config },
    ...{ notifications: options.notifications, observer: metrics?.executions, workerStuckMs: options.workerStuckMs },
  });
  const reachability = new DatabaseReachability(storage, logger, pingTiming(config.database));
  const jwks = new JwksCache({ clock, fetchOptions: { ...options.jwksFetch, allowInsecure: config.jwksAllowInsecure } });
  // This process's worker: handed a new execution it claimed at insert, or woken to claim it.
  const intake = new WebhookIntake({ clock, listeners, events, jwks, baseUrl: config.baseUrl, trustProxy: config.trustProxy, handOff: workerHandOff(worker) });

  // Each instance enforces its share of the limits: the quota over the instances counted live.
  const instances = stops.started(new LiveInstances(storage, clock, logger));
  const rateLimits = new RateLimits(config.rateLimits, clock, () => instances.count, config.trustProxy);
  if (rateLimits.active) await instances.start();
  const idempotencyRecords = new IdempotencyRecords(storage, clock);
  let stopping = false;
  const app = createApp({
    logger,
    idempotency: new Idempotency(idempotencyRecords, box(), spendKeptReferences(spends)),
    rateLimits,
    accessTokens,
    contractPath,
    docsPath,
    consoleDir,
    validateResponses: config.validateResponses,
    traceContextTrusted: config.traceContextTrusted ?? config.trustProxy,
    lockShedding: lockSheddingFor(config.database, storage, logger),
    requestObservers: metrics?.requestObservers,
    unready: async () => unreadyReasons(await reachability.check(), worker.stuck()),
    stopping: () => stopping,
    handlers: {
      ...identityHandlers({ grant, users, credentials, trustProxy: config.trustProxy }),
      ...fundsHandlers({ limits, caps, policy, effective }),
      ...spendHandlers({ spends, list: new SpendList(storage, clock, pageTokens) }),
      ...automationHandlers({ automations, executions, reruns, events, intake }),
      ...auditHandlers({ audit: new AuditTrail(storage, pageTokens) }),
    },
  });

  // First: a metrics port that is taken stops the start before the API takes any traffic.
  const scrapes = await metrics?.listen({
    storage,
    clock,
    runs: () => worker.runs(),
    reasons: () => unreadyReasons(reachability.reachableAtLastPing(), worker.stuck()),
    stopping: () => stopping,
    unansweredMs: () => reachability.unansweredMs(),
    stalledMs: () => worker.stalledMs(),
  }, logger);
  if (scrapes) stops.add(() => scrapes.close());
  const databaseConnections = config.database.kind === "postgres" ? (config.database.poolSize ?? DATABASE_DEFAULTS.poolSize) : 0;
  const connections = await listenApi(app, { port: config.port, host: config.host, logger, databaseConnections, parserRefused: metrics && ((reason) => metrics.http.parserRefused(reason)), refusedConnections: metrics?.http });

  stops.started(reachability).start();
  const { days, count, sweepSeconds } = config.executionRetention;
  const retention = stops.started(new ExecutionRetention({ storage, clock, logger }, { days, count }, { ...RETENTION_PACE, intervalMs: sweepSeconds * 1000, ...options.retentionPace }));
  retention.start();
  stops.started(startKeyUpkeep(signingKeys, logger, options.signingKeysReloadMs));
  stops.started(startFiringsSweep(fundTriggers, clock, logger));
  const onInboxMoved = metrics && (({ moved, caughtUp }: InboxMove) => metrics.database.auditInboxMoved(moved, caughtUp, clock.now()));
  for (const task of startAuditUpkeep({ storage, clock, logger, retentionDays: config.auditRetentionDays, inboxMoveMs: options.auditInboxMoveMs, onInboxMoved })) stops.started(task);
  stops.started(startIdempotencySweep(idempotencyRecords, logger));
  stops.started(worker).start();
  stops.add(() => connections.stop());

  let closing: Promise<void> | undefined;
  const close = (drainMs = 0) =>
    (closing ??= (async () => {
      stopping = true;
      connections.closeAfterAnswers();
      void worker.stop();
      // A sweep under way ends after its current batch.
      void retention.stop();
      await new Promise((resolve) => setTimeout(resolve, drainMs));
      // The connections first, then the worker again (releasing the executions whose records committed since), then the rest.
      await stops.stopAll();
    })());

  const unfinished = () => ({ ...connections.unfinished(), executions: worker.runs() });
  const bound = boundAddress(connections.server.address() as AddressInfo);
  return { ...bound, worker, retention, close, unfinished, ...(scrapes ? { metricsUrl: scrapes.url, metricsListening: scrapes.listening } : {}) };
}
