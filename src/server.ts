// The composition root: opens storage, builds the services, binds handlers, and serves HTTP.
// Tests start it in-process on an ephemeral port with a clock they control; main.ts starts it for real.
import type { AddressInfo } from "node:net";
import { DATABASE_DEFAULTS, type Config } from "./config.js";
import { MovableClock, systemClock, type Clock } from "./core/clock.js";
import { boundAddress } from "./core/listen-address.js";
import { createLogger, type Logger } from "./core/logger.js";
import { consoleDir, contractPath, docsPath } from "./core/package-root.js";
import { PageTokens } from "./core/pagination.js";
import { StopList } from "./core/stop-list.js";
import { unreadyReasons } from "./core/readiness.js";
import { fundServices } from "./funds/fund-services.js";
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
import { sandboxHandlers } from "./http/handlers/sandbox-handlers.js";
import type { InboxMove } from "./audit/audit-inbox.js";
import { AuditTrail } from "./audit/audit-trail.js";
import { startAuditUpkeep } from "./audit/audit-upkeep.js";
import { identityServices } from "./identity/identity-services.js";
import { startKeyUpkeep } from "./identity/signing-keys.js";
import { automationServices } from "./automations/automation-services.js";
import { workerHandOff } from "./automations/event-hand-off.js";
import { ExecutionRetention, RETENTION_PACE, type RetentionPace } from "./automations/execution-retention.js";
import { FundTriggers, startFiringsSweep } from "./automations/fund-triggers.js";
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
import { SandboxClock } from "./sandbox/sandbox-clock.js";
import type { BackgroundTask } from "./core/background-task.js";

export interface ServerOptions {
  config: Config;
  clock?: Clock;
  /**
   * Started as the sandbox (scripts/sandbox.ts; never from the environment): the clock is `clock`
   * (the system's) moved forward by SandboxClockService.Advance, whose operations are bound only
   * then, and every answer carries the `Sandbox-Time` header.
   */
  sandbox?: boolean;
  logger?: Logger;
  /** How JWKS are fetched, beyond the configuration (tests: a DNS resolver, a CA, a stand-in public host). */
  jwksFetch?: Omit<FetchJwksOptions, "allowInsecure">;
  /** How `notify` steps call out, beyond the configuration (tests: a DNS resolver, a CA, shorter bounds). */
  notifications?: Omit<OutboundOptions, "allowInsecure">;
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
  /** Listening on every address: a URL for each address the machine has (IPv4 ones first). */
  urls?: string[];
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
  const sandboxClock = options.sandbox ? new MovableClock(options.clock ?? systemClock) : undefined;
  const clock = sandboxClock ?? options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const stops = new StopList(logger);
  try {
    // OTEL_*: off unless an OTLP endpoint is set (then OpenTelemetry is loaded, and spans are exported
    // until the very end of `close`: the spans of every stop are exported, within a bound of their own).
    const tracing = await startTracing(config.tracing, logger);
    if (tracing) stops.add("traces", () => tracing.stop());
    const metrics = config.metrics ? new Metrics(config.metrics, config.database.kind, await currentBuild()) : undefined;
    const storage = await openStorage(config.database, { migrate: config.migrateAtStart, observer: metrics?.database, migrations: loggedMigrations(logger) });
    stops.add("database", () => storage.close());
    const secretsKey = loadSecretsKey(config.secretsKey);
    /** A box of its own for each room: one's opened secrets do not take the places of another's in its cache. */
    const box = () => new SecretBox(secretsKey);
    await checkSealedSecrets(storage, box(), config.secretsKey);
    /** A cache of this instance kept current with the changes of every instance (storage/change-versions.ts). */
    const watch = async (kind: ChangeKind, poll: PollTiming | undefined) => stops.started(`${kind} changes`, await ChangeWatch.started(storage, kind, logger, poll));

    const pageTokens = new PageTokens(await sharedKey(storage, "page_token_key"));
    // Revocations and role changes, made by any instance, reach this one's cached principals.
    const principals = await watch("principals", options.principalsPoll);
    const { users, credentials, signingKeys, accessTokens, grant } = await identityServices({ storage, clock, logger, pageTokens, box: box(), config, principals });
    const fundTriggers = new FundTriggers(storage, clock, await watch("fund_triggers", options.fundTriggersPoll), logger);
    await fundTriggers.load();
    const policyChanges = await watch("fund_policy", options.fundPolicyPoll);
    const funds = await fundServices({ storage, clock, pageTokens, users, config, policyChanges, events: fundTriggers, observer: metrics?.spends });
    const { policy, limits, spends } = funds;

    const listeners = new Listeners(storage, clock, box(), config.webhookSecretGraceSeconds, await watch("listeners", options.listenersPoll));
    const events = new WebhookEvents(storage, clock, pageTokens);
    const { automations, worker, executions, reruns, bulkRedrive, destinations } = automationServices({
      ...{ storage, clock, logger, pageTokens, box: box(), listeners, events, policy, limits, fundTriggers, config },
      ...{ notifications: options.notifications, observer: metrics?.executions, workerStuckMs: options.workerStuckMs },
    });
    const reachability = new DatabaseReachability(storage, logger, pingTiming(config.database));
    const jwks = new JwksCache({ clock, fetchOptions: { ...options.jwksFetch, allowInsecure: config.jwksAllowInsecure } });
    // This process's worker: handed a new execution it claimed at insert, or woken to claim it.
    const intake = new WebhookIntake({ clock, listeners, events, jwks, baseUrl: config.baseUrl, trustProxy: config.trustProxy, handOff: workerHandOff(worker) });

    // Each instance enforces its share of the limits: the quota over the instances counted live.
    const instances = stops.started("instance heartbeat", new LiveInstances(storage, clock, logger));
    const rateLimits = new RateLimits(config.rateLimits, clock, () => instances.count, config.trustProxy);
    if (rateLimits.active) await instances.start();
    const idempotencyRecords = new IdempotencyRecords(storage, clock);
    let stopping = false;
    /** The background tasks that act on time: a move of the sandbox's clock runs them at once (runDue). */
    const timedTasks: BackgroundTask[] = [];
    const runDue = async () => {
      worker.notify();
      await Promise.all([worker.idle(), worker.sweep(), retention.runNow(), ...timedTasks.map((task) => task.runNow())]);
    };
    const sandbox = sandboxClock && new SandboxClock(storage, sandboxClock, runDue);
    const app = createApp({
      ...{ logger, rateLimits, accessTokens, contractPath, docsPath, consoleDir, validateResponses: config.validateResponses, requestObservers: metrics?.requestObservers },
      idempotency: new Idempotency(idempotencyRecords, box(), spendKeptReferences(spends)),
      traceContextTrusted: config.traceContextTrusted ?? config.trustProxy,
      lockShedding: lockSheddingFor(config.database, storage, logger),
      unready: async () => unreadyReasons(await reachability.check(), worker.stuck()),
      stopping: () => stopping,
      sandboxTime: sandboxClock && (() => sandboxClock.now()),
      handlers: {
        ...identityHandlers({ grant, users, credentials, trustProxy: config.trustProxy }),
        ...fundsHandlers(funds),
        ...spendHandlers({ spends, list: funds.spendList }),
        ...automationHandlers({ automations, executions, reruns, bulkRedrive, events, intake, destinations }),
        ...auditHandlers({ audit: new AuditTrail(storage, pageTokens) }),
        ...(sandbox && sandboxHandlers(sandbox)),
      },
    });

    // First: a metrics port that is taken stops the start before the API takes any traffic.
    const scrapes = await metrics?.listen({
      ...{ storage, clock, runs: () => worker.runs(), destinations: () => destinations.counts(), stopping: () => stopping, stalledMs: () => worker.stalledMs() },
      reasons: () => unreadyReasons(reachability.reachableAtLastPing(), worker.stuck()),
      unansweredMs: () => reachability.unansweredMs(),
    }, logger);
    if (scrapes) stops.add("metrics listener", () => scrapes.close());
    stops.started("database ping", reachability).start();
    const { days, count, sweepSeconds } = config.executionRetention;
    const retention = stops.started("execution retention", new ExecutionRetention({ storage, clock, logger }, { days, count }, { ...RETENTION_PACE, intervalMs: sweepSeconds * 1000, ...options.retentionPace }));
    retention.start();
    const timed = (name: string, task: BackgroundTask) => timedTasks.push(stops.started(name, task));
    timed("signing key upkeep", startKeyUpkeep(signingKeys, logger, options.signingKeysReloadMs));
    timed("fund threshold firing sweep", startFiringsSweep(fundTriggers, clock, logger));
    const onInboxMoved = metrics && (({ moved, caughtUp }: InboxMove) => metrics.database.auditInboxMoved(moved, caughtUp, clock.now()));
    for (const task of startAuditUpkeep({ storage, clock, logger, retentionDays: config.auditRetentionDays, inboxMoveMs: options.auditInboxMoveMs, onInboxMoved })) timed("audit upkeep", task);
    timed("idempotency record sweep", startIdempotencySweep(idempotencyRecords, logger));
    stops.started("execution worker", worker);
    // The listener last, so that it stops first (the worker after it, releasing what its requests
    // committed); the worker runs once the listener is up, so a start refused its port runs nothing.
    const databaseConnections = config.database.kind === "postgres" ? (config.database.poolSize ?? DATABASE_DEFAULTS.poolSize) : 0;
    const connections = await listenApi(app, { port: config.port, host: config.host, logger, databaseConnections, parserRefused: metrics && ((reason) => metrics.http.parserRefused(reason)), refusedConnections: metrics?.http });
    stops.add("API listener", () => connections.stop());
    worker.start();

    let closing: Promise<void> | undefined;
    const close = (drainMs = 0) =>
      (closing ??= (async () => {
        stopping = true;
        connections.closeAfterAnswers();
        void worker.stop();
        // A sweep under way ends after its current batch.
        void retention.stop();
        await new Promise((resolve) => setTimeout(resolve, drainMs));
        if (!(await stops.stopAll())) throw new Error("the server did not stop cleanly: the log names the parts that failed");
      })());
    const unfinished = () => ({ ...connections.unfinished(), executions: worker.runs() });
    const bound = boundAddress(connections.server.address() as AddressInfo);
    return { ...bound, worker, retention, close, unfinished, ...(scrapes ? { metricsUrl: scrapes.url, metricsListening: scrapes.listening } : {}) };
  } catch (e) {
    // A start that fails leaves nothing running: in a process that goes on (a test, an embedding),
    // neither traces nor the polls nor the database of a server that never served. A stop that
    // fails is logged; the start's own failure is the one thrown.
    await stops.stopAll();
    throw e;
  }
}
