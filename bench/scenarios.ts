// The scenarios of issues 6 and 15 on one database: start the server (compiled), set up through the API,
// measure each scenario in the load-generator process, and collect the figures of the section.
import type { JsonWebKey } from "node:crypto";
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { sql } from "kysely";
import { openStorage, type Storage } from "../src/storage/connect.js";
import { Api, hmacHeaders, type Credentials } from "./api.js";
import { createBenchDatabase, POSTGRES_ADMIN_URL, type Dialect } from "./database.js";
import type { LoadSpec, RequestSpec } from "./load.js";
import { startOtlpSink } from "./otlp-sink.js";
import { startFloor, type Floor } from "./floor.js";
import { freePort, ROOT, startDriver, startNode, type Driver, type NodeProcess } from "./processes.js";
import { AUDIT_KEYS, AUDIT_RUNS, FLOOR_KEYS, FLOORS, inTurn, METRICS_KEYS, METRICS_RUNS, percentile, TRACES_KEYS, TRACES_RUNS, SPEND_KEYS, type ExecutionWait, type Measured, type ScenarioKey, type Section, type SpendCheck } from "./report.js";
import { measureBacklogFairness, measureParkedIntake, measureSilentNotify, type DeliveryContext, type DeliverySizes } from "./delivery.js";
import { measurePruning } from "./pruning.js";
import { countRoundTrips, type Operation } from "./round-trips.js";
import { seedSubjectAppLimits } from "./seed.js";
import { soak } from "./soak.js";
import { AUTHORIZE_PATH, authorizationsToChange, authorizeRequest, checkSpends, serverAuthorizations, setUpSpends, SPEND_APPS, type ChangeableState } from "./spends.js";

export interface BenchSettings {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  /** Users seeded for the list scenario; each gets `appsPerUser` rows. */
  seedUsers: number;
  appsPerUser: number;
  /** The page of the deep list request (page_size 100). */
  deepPage: number;
  logLevel: string;
  /** With --profile: the servers write V8 CPU profiles (--cpu-prof) into this folder. */
  profileDir?: string;
  /** Where the servers' logs go. */
  workDir: string;
  /** With --only: the scenarios to measure (setup still runs); all when undefined. */
  only?: ReadonlySet<ScenarioKey>;
  /** With --soak: HMAC intake for this long at `rate` (half of scenario 1's when absent), RSS sampled. */
  soak?: { seconds: number; rate?: number };
  /** PostgreSQL: count the round trips of each operation (a server of its own). */
  roundTrips: boolean;
  /** PostgreSQL, with --statements: each scenario's costliest statements (bench/statements.ts). */
  statements: boolean;
  /** Scenario 11: the expired executions seeded for the sweep to remove. */
  pruningBacklog: number;
  /** Scenarios 14 to 16: their sizes. */
  delivery: DeliverySizes;
}

export interface JwtKey {
  alg: "ES256" | "EdDSA";
  kid: string;
  privateJwk: JsonWebKey;
  /** Its JWKS URL on the bench's JWKS server. */
  jwksUrl: string;
}

const ADMIN: Credentials = { clientId: "bench-admin", clientSecret: "bench-admin-secret-0123456789" };
const SECRETS_KEY = Buffer.alloc(32, 11).toString("base64url");
const HMAC_BODY = JSON.stringify({ n: 21, source: "bench", items: [{ sku: "A-1", qty: 2 }, { sku: "B-7", qty: 1 }] });
const APP_KEYS = 100;
/** Scenario 8: each credential's limit, per second (and at once): low, so that even a slow machine's flood is mostly over it. */
const CREDENTIAL_QUOTA = 100;
/** Scenario 8: what the flooding credential sends, requests a second. */
const FLOOD_RATE = 10 * CREDENTIAL_QUOTA;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The spend operations measured against a floor, with their floors. */
const SPEND_FLOORED = ["spend-authorize-approved", "spend-authorize-declined", "spend-capture", "spend-release", "spend-reverse"] as const;
const SPEND_FLOORED_KEYS: readonly ScenarioKey[] = SPEND_FLOORED.flatMap((k) => [k, FLOORS[k]]);

/** The change scenarios of an authorization: each changes authorizations of one state, each once. */
const CHANGES = [
  { key: "spend-capture", action: "capture", state: "PENDING", label: "9. SpendService.Capture, the whole hold" },
  { key: "spend-release", action: "release", state: "PENDING", label: "9. SpendService.Release, the whole hold" },
  { key: "spend-reverse", action: "reverse", state: "CAPTURED", label: "9. SpendService.Reverse, the whole capture" },
] as const satisfies readonly { key: ScenarioKey; action: string; state: ChangeableState; label: string }[];

/** As many authorizations as a change run may take: a change costs less than a decision (a capture up to 2.6× the approved rate seen), so three times that rate, and 200 more. */
const toChangeFor = (approved: Measured | undefined, settings: BenchSettings) => Math.ceil((approved?.result.requestsPerSecond ?? 1000) * 3 * (settings.durationSeconds + settings.warmupSeconds)) + 200;

/** The runs of scenarios 10, 12 and 13, the setting measured on or off. */
const IN_TURN_ORDER = inTurn(4);

/**
 * Scenario 13's switch: with `dropped`, a trigger makes the database skip every event a change
 * records: on SQLite its insert into the inbox (SQLite's RAISE(IGNORE); the move then has nothing to
 * move), on PostgreSQL into audit_events (a row trigger answering NULL); without, it is gone.
 */
async function auditInsertsDropped(storage: Storage, dialect: Dialect, dropped: boolean): Promise<void> {
  const { db } = storage;
  if (dialect === "sqlite") {
    await sql`drop trigger if exists bench_audit_dropped`.execute(db);
    if (dropped) await sql`create trigger bench_audit_dropped before insert on audit_inbox begin select raise(ignore); end`.execute(db);
    return;
  }
  await sql`drop trigger if exists bench_audit_dropped on audit_events`.execute(db);
  if (!dropped) return;
  await sql`create or replace function bench_audit_dropped() returns trigger language plpgsql as $$ begin return null; end $$`.execute(db);
  await sql`create trigger bench_audit_dropped before insert on audit_events for each row execute function bench_audit_dropped()`.execute(db);
}

/** Fetches `url` every second until stopped, as a scraper would; a failed scrape is the server's to report. */
function scrapeEverySecond(url: string): { stop(): Promise<void> } {
  let last: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    last = fetch(url).then((r) => r.text(), () => undefined);
  }, 1000);
  return {
    stop: async () => {
      clearInterval(timer);
      await last;
    },
  };
}

/**
 * Waits until every execution of the automation has finished, and no new one appeared for 300 ms
 * (requests still in flight when the load generator stopped may commit a moment later); answers
 * how long that took.
 */
async function drain(storage: Storage, automationId: string, timeoutMs = 300_000): Promise<number> {
  const started = performance.now();
  let settled: { total: number; at: number } | undefined;
  for (;;) {
    const { pending, total } = await storage.db
      .selectFrom("automation_executions")
      .select((eb) => [eb.fn.countAll<number | string>().as("total"), eb.fn.sum<number | string | null>(eb.case().when("completed_at", "is", null).then(1).else(0).end()).as("pending")])
      .where("automation_id", "=", automationId)
      .executeTakeFirstOrThrow();
    const now = performance.now();
    if (Number(pending ?? 0) === 0) {
      if (settled?.total === Number(total)) {
        if (now - settled.at >= 300) return settled.at - started;
      } else {
        settled = { total: Number(total), at: now };
      }
    } else {
      settled = undefined;
    }
    if (now - started > timeoutMs) throw new Error(`${pending} executions of ${automationId} still pending after ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** completed_at − created_at of every finished execution of the automation. */
async function executionWait(storage: Storage, automationId: string, drainMs: number): Promise<ExecutionWait & { failedCount: number; sample?: string }> {
  const rows = await storage.db.selectFrom("automation_executions").select(["created_at", "completed_at", "state", "step_results"]).where("automation_id", "=", automationId).execute();
  const failed = rows.filter((r) => r.state !== "AUTOMATION_EXECUTION_STATE_DONE");
  const waits = rows.filter((r) => r.completed_at).map((r) => Date.parse(r.completed_at!) - Date.parse(r.created_at)).sort((a, b) => a - b);
  return {
    count: rows.length,
    p50Ms: percentile(waits, 50),
    p99Ms: percentile(waits, 99),
    maxMs: waits[waits.length - 1] ?? Number.NaN,
    drainMs,
    failedCount: failed.length,
    ...(failed[0] ? { sample: `${failed[0].state} ${failed[0].step_results}` } : {}),
  };
}

export async function runDatabase(dialect: Dialect, settings: BenchSettings, driver: Driver, keys: { es256: JwtKey; eddsa: JwtKey }, log: (line: string) => void): Promise<Section> {
  const database = await createBenchDatabase(dialect, settings.workDir);
  const description = await database.describe();
  const processes: NodeProcess[] = [];
  let storage: Storage | undefined;
  let floor: Floor | undefined;
  try {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const serverEnv = (validate: "0" | "1"): Record<string, string> => ({
      HOST: "127.0.0.1",
      BASE_URL: origin,
      DATABASE_URL: database.url,
      SECRETS_KEY,
      BOOTSTRAP_CLIENT_ID: ADMIN.clientId,
      BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret,
      LOG_LEVEL: settings.logLevel,
      NODE_ENV: "production",
      VALIDATE_RESPONSES: validate,
      JWKS_ALLOW_INSECURE: "1",
      ACCESS_TOKEN_TTL_SECONDS: "3600",
      // The scenarios measure the work of answering, not the limits (scenario 8 turns them on).
      RATE_LIMIT: "off",
      // No balancer in front: stopped without a drain.
      SHUTDOWN_DRAIN_SECONDS: "0",
      // Nothing is removed but by scenario 11's own server (the others would sweep its backlog).
      EXECUTION_RETENTION_DAYS: "3650",
    });
    const profileArgs = (name: string) => (settings.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${settings.profileDir}`, `--cpu-prof-name=${name}-${new Date().toISOString().replace(/[-:.]/g, "")}.cpuprofile`] : []);
    const start = async (validate: "0" | "1", listenPort: number, env: Record<string, string> = {}, extraNodeArgs: string[] = []) => {
      const nodeArgs = [...extraNodeArgs, ...profileArgs(`${dialect}-validate${validate}`)];
      const p = await startNode({ script: join(ROOT, "dist/src/main.js"), env: { ...serverEnv(validate), ...env }, port: listenPort, probePath: "/readyz", logFile: join(settings.workDir, `server-${dialect}-${listenPort}.log`), nodeArgs });
      processes.push(p);
      return p;
    };
    const server = await start("0", port);
    storage = await openStorage(database.config);
    const db = storage;
    const api = await Api.login(origin, ADMIN);
    log(`${dialect}: server pid ${server.pid} on ${origin} (${description})`);

    const scenarios: Measured[] = [];
    const statementsSource = settings.statements && dialect === "postgres" ? { adminUrl: POSTGRES_ADMIN_URL, database: new URL(database.url).pathname.slice(1) } : undefined;
    const wanted = (...keys: ScenarioKey[]) => !settings.only || keys.some((k) => settings.only!.has(k));
    // The requests of the operations measured on the main server, for the round-trip count.
    const operations = new Map<ScenarioKey, Operation>();
    /** Operations whose requests carry a signed timestamp, signed again before their round trips are counted. */
    const resign = new Map<ScenarioKey, () => RequestSpec>();
    /** `needed`: measured even when --only leaves it out (another scenario needs its figures); `unlisted`: not a row of the report by itself. */
    type MeasureOptions = { expectStatus?: number; target?: NodeProcess; driver?: Driver; needed?: boolean; unlisted?: boolean } & Partial<Pick<LoadSpec, "connections" | "durationSeconds" | "warmupSeconds" | "rate">>;
    const measure = async (key: ScenarioKey, label: string, request: RequestSpec, opts: MeasureOptions = {}): Promise<Measured | undefined> => {
      if (!wanted(key) && !opts.needed) return undefined;
      const target = opts.target ?? server;
      if (target === server && !opts.rate) operations.set(key, { label: label.replace(/^\d+\. /, ""), request, expectStatus: opts.expectStatus ?? 200 });
      const spec: LoadSpec = {
        origin: target.url,
        connections: opts.connections ?? settings.connections,
        durationSeconds: opts.durationSeconds ?? settings.durationSeconds,
        warmupSeconds: opts.warmupSeconds ?? settings.warmupSeconds,
        expectStatus: opts.expectStatus ?? 200,
        serverPid: target.pid,
        ...(opts.rate ? { rate: opts.rate } : {}),
        ...(statementsSource ? { statements: statementsSource } : {}),
      };
      const result = await (opts.driver ?? driver).run(spec, request);
      const m: Measured = { key, label, result, rssMiB: target.rssMiB() };
      if (!opts.unlisted) scenarios.push(m);
      log(`${dialect}: ${label}: ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.latencyMs.p50.toFixed(2)} ms, p99 ${result.latencyMs.p99.toFixed(2)} ms, statuses ${JSON.stringify(result.statuses)}, errors ${result.errors.socket + result.errors.timeouts}, RSS ${Math.round(m.rssMiB)} MiB`);
      return m;
    };
    // ---- Issue 33: the floor of an operation, measured right after it, on the floor server -------
    // Started when first needed, once for the database; measured whenever the operation or its floor is.
    const floorServer = async () => (floor ??= await startFloor(database, settings.workDir, profileArgs(`${dialect}-floor`)));
    const measureFloor = async (key: keyof typeof FLOORS, label: string, request: (floor: Floor) => Promise<RequestSpec>): Promise<Measured | undefined> => {
      const heldToIt = (Object.keys(FLOORS) as (keyof typeof FLOORS)[]).filter((k) => FLOORS[k] === FLOORS[key]);
      if (!wanted(...heldToIt, FLOORS[key])) return undefined;
      const f = await floorServer();
      return measure(FLOORS[key], `Floor: ${label}`, await request(f), { target: f.server, needed: true });
    };

    // ---- 1. HMAC intake, a fresh event id per request --------------------------------------
    // Its rate is the maximum intake that scenario 1b and the soak send half of.
    const hmac = await api.createWebhookAutomation("bench hmac", { hmac: {} });
    const hmacRequest = (automation: { path: string; secret?: string }): RequestSpec => ({ kind: "hmac", path: automation.path, secret: automation.secret!, body: HMAC_BODY });
    const hmacRun = await measure("hmac", "1. Webhook intake, HMAC, fresh event ids", hmacRequest(hmac), { needed: wanted("hmac-steady", "pruning-off", "pruning-on") || (settings.soak !== undefined && settings.soak.rate === undefined) });
    /** Waits for the automation's executions to finish, and answers how long they took from acceptance. */
    const executionsOf = async (automationId: string, what: string, storage = db): Promise<ExecutionWait> => {
      const drainMs = await drain(storage, automationId);
      const { failedCount, sample, ...figures } = await executionWait(storage, automationId, drainMs);
      if (failedCount > 0) log(`${dialect}: warning: ${failedCount} executions of ${what} did not end DONE, e.g. ${sample}`);
      log(`${dialect}: ${what}: accepted → done p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms over ${figures.count} executions; drained ${Math.round(drainMs)} ms after the load`);
      return failedCount > 0 ? { ...figures, notDone: { count: failedCount, sample: sample ?? "" } } : figures;
    };
    const executionWaitFigures = hmacRun ? await executionsOf(hmac.id, "scenario 1") : undefined;
    await measureFloor("hmac", "webhook intake, HMAC, fresh event ids", async (f) => (await f.seedListener(hmac.path, hmac.secret!), hmacRequest(hmac)));
    const halfIntake = hmacRun ? Math.max(1, Math.round(hmacRun.result.requestsPerSecond / 2)) : undefined;

    // ---- 1b. HMAC intake at half the maximum: accepted → done, not at saturation --------------
    // An automation of its own, so that its executions are this window's; no warm-up (scenario 1 was one).
    let steadyWait: Section["steadyWait"];
    if (wanted("hmac-steady") && halfIntake) {
      const steady = await api.createWebhookAutomation("bench hmac steady", { hmac: {} });
      await measure("hmac-steady", `1b. Webhook intake, HMAC, at half the maximum (${halfIntake} events/s)`, hmacRequest(steady), { rate: halfIntake, warmupSeconds: 0 });
      steadyWait = { ...(await executionsOf(steady.id, "scenario 1b")), rate: halfIntake };
    }

    // ---- 2. JWT intake, keys cached ----------------------------------------------------------
    // Tokens are signed before the run (a token per event id, jti = event id, htb_s256 of the
    // body), as many as HMAC intake answered with some margin; any beyond are signed during the run.
    const expectedRps = hmacRun?.result.requestsPerSecond ?? 1000;
    const pregenerate = Math.min(100_000, Math.ceil(expectedRps * (settings.durationSeconds + settings.warmupSeconds) * 1.25) + 500);
    for (const [key, jwt] of [["jwt-es256", keys.es256], ["jwt-eddsa", keys.eddsa]] as const) {
      if (!wanted(key)) continue;
      const automation = await api.createWebhookAutomation(`bench ${jwt.alg}`, { jwt: { jwksUrl: jwt.jwksUrl } });
      await measure(key, `2. Webhook intake, JWT ${jwt.alg}, keys cached`, { kind: "jwt", path: automation.path, alg: jwt.alg, kid: jwt.kid, privateJwk: jwt.privateJwk, subject: origin, audience: automation.url, body: HMAC_BODY, pregenerate });
      await drain(db, automation.id);
    }

    // ---- 3. Duplicates: one event id again and again (409) -----------------------------------
    if (wanted("duplicate")) {
      const dupId = randomUUID();
      // Signed when sent: the round trips are counted minutes later, past the intake's timestamp window.
      const signedNow = (): Extract<RequestSpec, { kind: "fixed" }> => ({ kind: "fixed", method: "POST", path: hmac.path, headers: hmacHeaders(hmac.secret!, dupId, HMAC_BODY), body: HMAC_BODY });
      const dupRequest = signedNow();
      const first = await fetch(origin + hmac.path, { method: "POST", headers: dupRequest.headers, body: HMAC_BODY });
      if (first.status !== 200) throw new Error(`the first delivery of the duplicate event answered ${first.status}`);
      await measure("duplicate", "3. Webhook intake, duplicate event id (409)", dupRequest, { expectStatus: 409 });
      resign.set("duplicate", signedNow);
      await drain(db, hmac.id);
    }

    // ---- 4. SetLimit (the caller's own) and Suspend ------------------------------------------
    // The subject's rows app-0..app-99 hold a monthly amount limit (GetEffective, Get and the seed's template).
    const subject = await api.createUser("Bench subject", "bench-subject@bench.example");
    const money = (units: string) => ({ money: { currencyCode: "USD", units, nanos: 0 } });
    for (let k = 0; k < APP_KEYS; k++) {
      await api.call("POST", `/api/v1/funds/subject-app-limits/${subject}/app-${k}/limit`, { limit: { amount: money(String(100 + k)) }, period: "PERIOD_KIND_MONTHLY" });
    }
    const headers = api.headers;
    const setLimitRequest: RequestSpec = { kind: "varying", method: "POST", path: "/api/v1/funds/my/app-limits/app-{k}/limit", headers, body: JSON.stringify({ limit: { amount: money("{r}") } }), keys: APP_KEYS };
    const suspendRequest: RequestSpec = { kind: "varying", method: "POST", path: `/api/v1/funds/subject-app-limits/${subject}/susp-{k}/suspension`, headers, body: JSON.stringify({ reason: "bench {r}" }), keys: APP_KEYS };
    await measure("my-set-limit", "4. MyFundLimitsService.SetLimit", setLimitRequest);
    await measure("suspend", "4. SubjectAppLimitService.Suspend", suspendRequest);

    // ---- 5. GetEffective ----------------------------------------------------------------------
    await measure("get-effective", "5. SubjectAppLimitService.GetEffective", { kind: "varying", method: "GET", path: `/api/v1/funds/subject-app-limits/${subject}/app-{k}/effective`, headers, keys: APP_KEYS });
    await measure("policy-get", "5. FundPolicyService.Get", { kind: "fixed", method: "GET", path: "/api/v1/funds/policy", headers });

    // ---- 7. Response validation off and on, on one GET ----------------------------------------
    const getRow: RequestSpec = { kind: "varying", method: "GET", path: `/api/v1/funds/subject-app-limits/${subject}/app-{k}`, headers, keys: APP_KEYS };
    await measure("validation-off", "7. SubjectAppLimitService.Get, validation off", getRow);
    if (wanted("validation-on")) {
      const validating = await start("1", await freePort());
      await measure("validation-on", "7. SubjectAppLimitService.Get, validation on", getRow, { target: validating });
      await validating.stop();
    }

    // ---- 10, 12 and 13. A setting on vs off: metrics and traces (the HMAC intake and
    // SubjectAppLimitService.Get), the audit record (SetLimit and Suspend). Each request is measured
    // in turn off, on, on, off, twice, so that whatever else loads the machine over the runs (a
    // bench machine shared with other work) weighs on both alike: on two servers started together,
    // alike but for the setting, or on one whose database `toggle` changes for the runs off.
    type InTurn = { off: NodeProcess; on: NodeProcess; whileOn?: () => { stop(): Promise<void> }; toggle?: (on: boolean) => Promise<void>; after?: () => Promise<void> };
    const measureInTurn = async <R extends Record<string, { name: string; off: ScenarioKey; on: ScenarioKey }>>(scenario: number, setting: string, runs: R, requests: Record<keyof R, RequestSpec>, turn: InTurn) => {
      for (const [kind, run] of Object.entries(runs) as [keyof R, R[keyof R]][]) {
        for (const [n, isOn] of IN_TURN_ORDER.entries()) {
          await turn.toggle?.(isOn);
          const during = isOn ? turn.whileOn?.() : undefined;
          try {
            await measure(isOn ? run.on : run.off, `${scenario}. ${run.name}, ${setting} ${isOn ? "on" : "off"} (run ${n + 1} of ${IN_TURN_ORDER.length})`, requests[kind], { target: isOn ? turn.on : turn.off });
          } finally {
            await during?.stop();
          }
          await turn.after?.();
        }
      }
      await turn.toggle?.(true);
    };
    /** Scenarios 10 and 12's requests: an automation of their own, drained after each run. */
    const intakeAndGet = async (setting: string) => {
      const automation = await api.createWebhookAutomation(`bench ${setting}`, { hmac: {} });
      return { requests: { hmac: hmacRequest(automation), get: getRow }, after: () => drain(db, automation.id).then(() => undefined) };
    };
    // Metrics: the server with them scraped every second while measured (Prometheus's default is
    // every minute, 15 s in most setups).
    if (wanted(...METRICS_KEYS)) {
      const metricsPort = await freePort();
      const [off, on] = await Promise.all([start("0", await freePort()), start("0", await freePort(), { METRICS_PORT: String(metricsPort) })]);
      try {
        const { requests, after } = await intakeAndGet("metrics");
        await measureInTurn(10, "metrics", METRICS_RUNS, requests, { off, on, after, whileOn: () => scrapeEverySecond(`http://127.0.0.1:${metricsPort}/metrics`) });
      } finally {
        await off.stop();
        await on.stop();
      }
    }
    // Traces: one in ten new traces sampled (parentbased_traceidratio, 0.1), as docs/operating.md advises,
    // exported over OTLP/HTTP (protobuf) to a receiver in the bench that answers as a collector does.
    let traceExports: Section["traceExports"];
    if (wanted(...TRACES_KEYS)) {
      const sink = await startOtlpSink();
      const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" };
      const [off, on] = await Promise.all([start("0", await freePort()), start("0", await freePort(), traced)]);
      try {
        const { requests, after } = await intakeAndGet("traces");
        await measureInTurn(12, "traces", TRACES_RUNS, requests, { off, on, after });
      } finally {
        await off.stop();
        await on.stop();
        traceExports = sink.received();
        await sink.close();
      }
    }

    // ---- 13. The audit record: scenario 4's writes with their audit events stored, and dropped ----
    // Off, a trigger drops each insert into audit_events: the server does all it does (the event is
    // built and sent in the change's own statement), the database stores nothing of it.
    if (wanted(...AUDIT_KEYS)) {
      const requests = { setLimit: setLimitRequest, suspend: suspendRequest };
      await measureInTurn(13, "audit record", AUDIT_RUNS, requests, { off: server, on: server, toggle: (on) => auditInsertsDropped(db, dialect, !on) });
    }

    // ---- 8. Rate limits: a credential flooding over its limit, and another's latency ----------
    // Credential B sends at half its limit, alone and then while credential A sends ten times its
    // limit from a second load generator (answered 429 past it): B's p99 is compared with its p99
    // alone. Only the credential limit is on, so that it is the one refusing A. A is paced rather
    // than as fast as it can: on this machine the load generators share the server's two cores, and
    // a flood at full speed measures how the cores are shared, not what the limit spares B.
    if (wanted("rate-limit-alone", "rate-limit-flooded", "rate-limit-flood")) {
      const limited = await start("0", await freePort(), { RATE_LIMIT: "on", RATE_LIMIT_SOURCE: "off", RATE_LIMIT_LISTENER: "off", RATE_LIMIT_LISTENER_FAILURES: "off", RATE_LIMIT_CREDENTIAL: `${CREDENTIAL_QUOTA}/1` });
      const headersOf = async (name: string) => (await Api.login(limited.url, await api.createCredential(await api.createUser(`Bench ${name}`, `bench-${name}@bench.example`)))).headers;
      const policy = (headers: Record<string, string>): RequestSpec => ({ kind: "fixed", method: "GET", path: "/api/v1/funds/policy", headers });
      const [a, b] = [policy(await headersOf("flooder")), policy(await headersOf("steady"))];
      // At least 5 s: B's p99 is read from a few hundred answers even in a quick run.
      const steady = { target: limited, connections: 4, rate: CREDENTIAL_QUOTA / 2, durationSeconds: Math.max(5, settings.durationSeconds) };
      const rate = `${CREDENTIAL_QUOTA / 2} req/s (limit ${CREDENTIAL_QUOTA}/s)`;
      await measure("rate-limit-alone", `8. Credential B at ${rate}, alone`, b, steady);
      const flooder = startDriver();
      try {
        const floodSeconds = settings.warmupSeconds + steady.durationSeconds + 2;
        const flood = measure("rate-limit-flood", `8. Credential A at ${FLOOD_RATE} req/s, over its limit (429)`, a, { target: limited, driver: flooder, expectStatus: 429, durationSeconds: floodSeconds, rate: FLOOD_RATE });
        await sleep(1000);
        await measure("rate-limit-flooded", `8. Credential B at ${rate}, A flooding`, b, steady);
        await flood;
      } finally {
        await flooder.stop();
        await limited.stop();
      }
    }

    // ---- 9. Spends: Authorize approved and declined, Capture, GetEffective with usage ---------
    // Approved: 1.00 against 10,000,000.00 a month, over 100 apps (a hold each, left pending).
    // Declined: 1.00 against 5.00 a month, over 100 other apps: five approved each, then every
    // one declined (LIMIT_EXCEEDED), each decision still stored. Capture: the holds the approved
    // scenario left, each captured whole once. GetEffective: the open apps, whose windows now
    // hold spent and held amounts. Then the overspend check, straight from the database.
    let spends: SpendCheck | undefined;
    let fundEventWait: Section["fundEventWait"];
    let spender: string | undefined;
    if (wanted(...SPEND_KEYS, ...SPEND_FLOORED_KEYS)) {
      const spending = (spender = await setUpSpends(api));
      // Autovacuum would analyze the rows just made within a minute; the scenarios start at once.
      if (dialect === "postgres") await sql`analyze users, subject_app_limits`.execute(db.db);
      if (wanted(...SPEND_FLOORED_KEYS)) await (await floorServer()).seedSpends(spending);
      const approved = await measure("spend-authorize-approved", "9. SpendService.Authorize, approved (a hold)", authorizeRequest(spender, "spend", headers));
      const floorApproved = await measureFloor("spend-authorize-approved", "Authorize, approved (a hold)", async () => authorizeRequest(spending, "spend", headers));
      await measure("spend-authorize-declined", "9. SpendService.Authorize, declined (limit exceeded)", authorizeRequest(spender, "decline", headers));
      await measureFloor("spend-authorize-declined", "Authorize, declined (limit exceeded)", async () => authorizeRequest(spending, "decline", headers));
      if (wanted("spend-authorize-threshold")) {
        // Issue 31: the approved decisions again, under an automation on usage thresholds of every
        // window (80 % and 100 %: far from reached, as a threshold is nearly always): what the
        // trigger check costs each decision. Removed after, so that nothing later runs under it.
        const { automation } = await api.call<{ automation: { id: string } }>("POST", "/api/v1/automations", {
          automation: {
            displayName: "bench usage thresholds",
            isDraft: false,
            triggers: [{ fundEvents: { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [80, 100] } }],
            automationSteps: [{ stepName: "percent", evaluateExpressions: { expressions: [{ name: "p", expression: "ctx.trigger.usageThreshold.percent" }] } }],
          },
        });
        await measure("spend-authorize-threshold", "9. SpendService.Authorize, approved, with a usage-threshold trigger", authorizeRequest(spender, "spend", headers));
        await api.call("DELETE", `/api/v1/automations/${automation.id}`);
      }
      if (wanted("spend-authorize-fired") && approved) {
        // Issue 31: every decision fires an automation on authorized spends, at half the approved
        // rate (not at saturation): how long from the decision, which makes the execution in its own
        // transaction, to the execution done.
        const rate = Math.max(1, Math.round(approved.result.requestsPerSecond / 2));
        const { automation } = await api.call<{ automation: { id: string } }>("POST", "/api/v1/automations", {
          automation: {
            displayName: "bench authorized spends",
            isDraft: false,
            triggers: [{ fundEvents: { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED"] } }],
            automationSteps: [{ stepName: "amount", evaluateExpressions: { expressions: [{ name: "units", expression: "ctx.trigger.authorization.amount.units" }] } }],
          },
        });
        await measure("spend-authorize-fired", `9. SpendService.Authorize, approved, each firing an automation, at half the maximum (${rate} decisions/s)`, authorizeRequest(spender, "spend", headers), { rate, warmupSeconds: 0 });
        fundEventWait = { ...(await executionsOf(automation.id, "scenario 9, fund events")), rate };
        await api.call("DELETE", `/api/v1/automations/${automation.id}`);
      }
      const changeRequest = (action: string, ids: string[]): RequestSpec => ({ kind: "each", method: "POST", path: `${AUTHORIZE_PATH}/{id}/${action}`, headers, body: "{}", ids });
      for (const change of CHANGES) {
        if (!wanted(change.key)) continue;
        const ids = await authorizationsToChange(serverAuthorizations(db, api, spending), spending, change.state, toChangeFor(approved, settings));
        log(`${dialect}: ${ids.length.toLocaleString("en-US")} authorizations to ${change.action}`);
        await measure(change.key, change.label, changeRequest(change.action, ids));
      }
      // Release and Reverse are held against the capture floor too: it is measured after them.
      await measureFloor("spend-capture", "Capture, the whole hold", async (f) => changeRequest("capture", await authorizationsToChange(f.authorizations(spending), spending, "PENDING", toChangeFor(floorApproved, settings))));
      await measure("spend-get-effective", "9. SubjectAppLimitService.GetEffective, with usage", { kind: "varying", method: "GET", path: `/api/v1/funds/subject-app-limits/${spender}/spend-{k}/effective`, headers, keys: SPEND_APPS });
      spends = await checkSpends(db, spender, Date.now());
      log(`${dialect}: spends: ${spends.approved} approved, ${spends.declined} declined, ${spends.captured} captured; overspend ${spends.overspent}${spends.samples.length ? `: ${spends.samples.join("; ")}` : ""}`);
    }

    // ---- 6. A list page at the start and deep, over the seeded rows --------------------------
    let seed: Section["seed"];
    let walk: Section["walk"];
    if (wanted("list-first", "list-deep")) {
      const template = await db.db.selectFrom("subject_app_limits").select(["controls", "amount_currency", "suspended"]).where("user_id", "=", subject).where("app_id", "=", "app-0").where("deleted_at", "is", null).executeTakeFirstOrThrow();
      log(`${dialect}: seeding ${(settings.seedUsers * settings.appsPerUser).toLocaleString("en-US")} subject-app rows...`);
      seed = await seedSubjectAppLimits(db, { users: settings.seedUsers, appsPerUser: settings.appsPerUser, template });
      log(`${dialect}: seeded ${seed.rows.toLocaleString("en-US")} rows in ${Math.round(seed.ms)} ms${seed.analyzeMs > 1 ? ` (+ ANALYZE ${Math.round(seed.analyzeMs)} ms)` : ""}`);
      // The seeding kept this process's event loop busy (SQLite is synchronous) for longer than the
      // server keeps an idle connection: let the HTTP client see that its pooled one was closed.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const search = "/api/v1/funds/subject-app-limits/search";
      let token = "";
      const walkStarted = performance.now();
      for (let page = 1; page < settings.deepPage; page++) {
        const answer = await api.call<{ list: unknown[]; nextPageToken: string }>("POST", search, { pageSize: 100, ...(token ? { pageToken: token } : {}) });
        if (!answer.nextPageToken) throw new Error(`the list ended at page ${page}, before page ${settings.deepPage}`);
        token = answer.nextPageToken;
      }
      walk = { pages: settings.deepPage - 1, ms: performance.now() - walkStarted };
      log(`${dialect}: walked ${walk.pages} pages in ${Math.round(walk.ms)} ms`);
      await measure("list-first", "6. Search, page_size 100, first page", { kind: "fixed", method: "POST", path: search, headers, body: JSON.stringify({ pageSize: 100 }) });
      await measure("list-deep", `6. Search, page_size 100, page ${settings.deepPage.toLocaleString("en-US")}`, { kind: "fixed", method: "POST", path: search, headers, body: JSON.stringify({ pageSize: 100, pageToken: token }) });
    }

    // ---- 14 to 16. Notifications and fairness (bench/delivery.ts) ------------------------------
    let silentNotify: Section["silentNotify"];
    let backlogFairness: Section["backlogFairness"];
    let parkedIntake: Section["parkedIntake"];
    if (wanted("notify-silent", "backlog-fairness", "intake-parked-off", "intake-parked-on")) {
      let isolated = 0;
      const delivery: DeliveryContext = {
        db,
        api,
        startIsolated: async (env) => {
          const own = await createBenchDatabase(dialect, settings.workDir, `delivery-${isolated++}`);
          const ownDb = await openStorage(own.config);
          let target: NodeProcess | undefined;
          const stop = async () => (await target?.stop(), await ownDb.close(), await own.drop());
          try {
            target = await start("0", await freePort(), { ...env, DATABASE_URL: own.url, NOTIFICATION_ALLOW_INSECURE: "1" });
            return { server: target, db: ownDb, api: await Api.login(target.url, ADMIN), stop };
          } catch (e) {
            await stop();
            throw e;
          }
        },
        run: async (key, label, request, target, { listed, ...load }) => (await measure(key, label, request, { target, ...load, unlisted: !listed }))!,
        hmacRequest,
        body: HMAC_BODY,
        executionsOf,
        drain: async (automationId) => void (await drain(db, automationId)),
        log: (line) => log(`${dialect}: ${line}`),
      };
      if (wanted("notify-silent")) silentNotify = await measureSilentNotify(delivery, settings.delivery);
      if (wanted("backlog-fairness")) backlogFairness = await measureBacklogFairness(delivery, settings.delivery, subject);
      if (wanted("intake-parked-off", "intake-parked-on")) {
        const measured = await measureParkedIntake(delivery, settings.delivery);
        scenarios.push(measured.off, measured.on);
        parkedIntake = measured.parkedIntake;
      }
    }

    // ---- --soak: HMAC intake at half the maximum (or --soak-rate) for a while, RSS sampled ------
    let soaked: Section["soak"];
    const soakRate = settings.soak?.rate ?? halfIntake;
    if (settings.soak && soakRate) {
      const automation = await api.createWebhookAutomation("bench soak", { hmac: {} });
      log(`${dialect}: soak: ${soakRate} events/s for ${settings.soak.seconds} s...`);
      soaked = await soak(driver, server, { origin, connections: settings.connections, durationSeconds: settings.soak.seconds, warmupSeconds: 0, expectStatus: 200, rate: soakRate, serverPid: server.pid }, hmacRequest(automation));
      await drain(db, automation.id);
      log(`${dialect}: soak: RSS ${soaked.samples.map((x) => Math.round(x.rssMiB)).join(" ")} MiB`);
    }
    // ---- 11. Pruning: the intake at half the maximum, a backlog of expired executions due or not ----
    // Last: the backlog left in the database changes nothing measured after it.
    let pruning: Section["pruning"];
    if (wanted("pruning-off", "pruning-on") && halfIntake) {
      const template = await db.db.selectFrom("automation_executions").select(["context", "steps", "step_results", "state"]).where("automation_id", "=", hmac.id).where("state", "=", "AUTOMATION_EXECUTION_STATE_DONE").limit(1).executeTakeFirstOrThrow();
      const measured = await measurePruning(
        {
          db,
          api,
          backlog: settings.pruningBacklog,
          rate: halfIntake,
          hmacRequest,
          start: async (env) => start("0", await freePort(), env),
          run: async (key, label, request, target) => (await measure(key, label, request, { target, rate: halfIntake, unlisted: true }))!,
          drain: async (automationId) => void (await drain(db, automationId)),
          log: (line) => log(`${dialect}: ${line}`),
        },
        template,
      );
      scenarios.push(measured.off, measured.on);
      pruning = measured.run;
    }

    const afterMiB = server.rssMiB();
    const memory = { afterMiB, maxMiB: Math.max(afterMiB, ...scenarios.map((m) => m.rssMiB), ...(soaked?.samples.map((x) => x.rssMiB) ?? [])) };
    log(`${dialect}: server RSS after every scenario ${Math.round(afterMiB)} MiB, most seen ${Math.round(memory.maxMiB)} MiB`);

    // ---- PostgreSQL: round trips per operation, on a server of its own that counts them ----------
    let roundTrips: Section["roundTrips"];
    let roundTripsFailed: string | undefined;
    if (dialect === "postgres" && settings.roundTrips && operations.size > 0) {
      const file = join(settings.workDir, "round-trips.jsonl");
      rmSync(file, { force: true });
      const counting = await start("0", await freePort(), { BENCH_ROUND_TRIPS_FILE: file }, ["--import", join(ROOT, "dist/bench/servers/round-trips.js")]);
      try {
        for (const [key, signed] of resign) {
          const op = operations.get(key);
          if (op) operations.set(key, { ...op, request: signed() });
        }
        // The change operations take fresh authorizations, 40 each, none taken by two of them.
        for (const state of ["PENDING", "CAPTURED"] as const) {
          const changes = CHANGES.filter((c) => c.state === state && operations.get(c.key)?.request.kind === "each");
          const ids = spender && changes.length ? await authorizationsToChange(serverAuthorizations(db, api, spender), spender, state, 40 * changes.length) : [];
          for (const [i, change] of changes.entries()) {
            const op = operations.get(change.key);
            if (op?.request.kind === "each") operations.set(change.key, { ...op, request: { ...op.request, ids: ids.slice(40 * i, 40 * (i + 1)) } });
          }
        }
        roundTrips = await countRoundTrips(driver, counting, file, [...operations.values()]);
        for (const r of roundTrips) log(`${dialect}: round trips: ${r.operation}: ${r.roundTrips} (${r.inTransaction} in ${r.transactions} transaction(s)), ${r.after} after the answer`);
      } catch (e) {
        // Counted last, on a server of its own: a failure here does not lose the run's figures, the report says it.
        roundTripsFailed = e instanceof Error ? e.message : String(e);
        log(`${dialect}: round trips not counted: ${roundTripsFailed}`);
      } finally {
        await counting.stop();
      }
    }

    const order: ScenarioKey[] = ["hmac", "hmac-steady", "jwt-es256", "jwt-eddsa", "duplicate", "my-set-limit", "suspend", "get-effective", "policy-get", "list-first", "list-deep", "validation-off", "validation-on", "rate-limit-alone", "rate-limit-flooded", "rate-limit-flood", ...SPEND_KEYS, ...FLOOR_KEYS, "notify-silent", "intake-parked-off", "intake-parked-on", "pruning-off", "pruning-on"];
    // Stable: the runs of scenarios 10, 12 and 13 keep their order, after the others.
    scenarios.sort((a, b) => (order.indexOf(a.key) + 1 || order.length + 1) - (order.indexOf(b.key) + 1 || order.length + 1));
    return { dialect, database: description, scenarios, memory, ...(executionWaitFigures ? { executionWait: executionWaitFigures } : {}), ...(steadyWait ? { steadyWait } : {}), ...(fundEventWait ? { fundEventWait } : {}), ...(soaked ? { soak: soaked } : {}), ...(roundTrips ? { roundTrips } : {}), ...(roundTripsFailed ? { roundTripsFailed } : {}), ...(seed ? { seed } : {}), ...(walk ? { walk } : {}), ...(spends ? { spends } : {}), ...(traceExports ? { traceExports } : {}), ...(silentNotify ? { silentNotify } : {}), ...(backlogFairness ? { backlogFairness } : {}), ...(parkedIntake ? { parkedIntake } : {}) };
  } finally {
    await storage?.close();
    await floor?.stop();
    for (const p of processes.reverse()) await p.stop();
    await database.drop();
  }
}
