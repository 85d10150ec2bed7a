// Graceful shutdown of real server processes (src/main.ts), signalled as an orchestrator signals
// them: /readyz answers 503 through the drain while requests are still served; then the listener
// stops, keep-alive connections are closed after one more answer or, idle, without a reset; the
// requests and runs under way finish, what the worker holds and has not begun is released to the
// other instances at once; everything within SHUTDOWN_TIMEOUT_SECONDS, past which what is left is
// cut (logged, rolled back). Clients keep connections alive as a load balancer does. On the test
// database (SQLite, or PostgreSQL in that leg).
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createApiClient, unwrap, type ApiClient } from "../../../src/client/index.js";
import { hmacSignature } from "../../../src/client/webhook-sender.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { freePort, serve, type Served } from "../../support/process.js";
import { amount, funds, newAppId } from "../limits/helpers.js";
import { automationsApi, evaluateStep, executionsOf, type Step } from "../webhooks/helpers.js";
import { webhookTrigger } from "../../support/triggers.js";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const ADMIN = { clientId: "shutdown-admin", clientSecret: "shutdown-admin-secret-0123456789" };
const BASE_URL = "http://tenant.example.test";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = mkdtempSync(join(tmpdir(), "tenant-shutdown-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Processes a test started: killed at its end if still running (a test that failed on a server that would not stop). */
const started: Served[] = [];
afterEach(() => {
  for (const s of started.splice(0)) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill("SIGKILL");
});

/** One server process on `database`, logging at info (its shutdown lines are read). */
async function startOne(database: TestDatabase, env: Record<string, string>): Promise<Served> {
  const port = await freePort();
  const served = await serve({
    command: process.execPath,
    args: ["--import", "tsx", join(root, "src/main.ts")],
    url: `http://127.0.0.1:${port}`,
    probePath: "/readyz",
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      BASE_URL,
      DATABASE_URL: database.url,
      SECRETS_KEY: Buffer.alloc(32, 5).toString("base64url"),
      BOOTSTRAP_CLIENT_ID: ADMIN.clientId,
      BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret,
      LOG_LEVEL: "info",
      RATE_LIMIT: "off",
      ...env,
    },
    timeoutMs: 90_000,
  });
  started.push(served);
  return served;
}

interface Exit {
  code: number | null;
  /** performance.now() when it exited. */
  at: number;
}

const exitOf = (served: Served): Promise<Exit> =>
  new Promise((resolve) => served.child.once("exit", (code) => resolve({ code, at: performance.now() })));

/** The server's JSON log lines with this message. */
function logged(served: Served, msg: string): Array<Record<string, unknown>> {
  return served
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === msg);
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Sent on a connection kept from an earlier request. */
  reusedSocket: boolean;
}

/** One request; `agent: false` opens a connection of its own, as a balancer's health check does. */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string; agent: Agent | false }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? "GET", headers: options.headers, agent: options.agent, timeout: 20_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reusedSocket: req.reusedSocket }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end(options.body);
  });
}

/** A raw TCP connection to the server, recording what arrives and how it ends. */
function rawConnection(port: number): Promise<{ socket: Socket; received: () => string; ended: Promise<{ at: number; error?: string }> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (received += chunk));
    const ended = new Promise<{ at: number; error?: string }>((settle) => {
      socket.once("end", () => settle({ at: performance.now() }));
      socket.once("error", (err: NodeJS.ErrnoException) => settle({ at: performance.now(), error: err.code ?? err.message }));
    });
    socket.once("connect", () => resolve({ socket, received: () => received, ended }));
    socket.once("error", reject);
  });
}

async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error("timed out waiting");
    await sleep(20);
  }
}

/** A published automation with an HMAC webhook trigger running `steps`. */
async function hooked(admin: ApiClient, steps: Step[]): Promise<{ id: string; path: string; secret: string }> {
  const saved = unwrap(await automationsApi(admin).create({ displayName: `shutdown ${randomUUID()}`, isDraft: false, enabled: true, triggers: [{ webhook: { hmac: {} } }], automationSteps: steps }));
  return { id: saved.automation.id!, path: new URL(webhookTrigger(saved.automation)!.url!).pathname, secret: saved.webhookSecret! };
}

function webhookHeaders(secret: string, eventId: string, body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return { "Content-Type": "application/json", "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId, "Webhook-Signature": hmacSignature(secret, timestamp, eventId, body) };
}

/** Waits until the automation has `count` executions, all finished; answers them. */
async function finished(admin: ApiClient, automationId: string, count: number) {
  for (let i = 0; i < 150; i++) {
    const all = await executionsOf(admin, automationId);
    if (all.length >= count && all.every((e) => e.state === "AUTOMATION_EXECUTION_STATE_DONE" || e.state === "AUTOMATION_EXECUTION_STATE_ERROR")) return all;
    await sleep(200);
  }
  throw new Error("the executions did not finish");
}

describe(`shutdown of a server process on ${testDialect()}`, () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dir);
  });
  afterAll(async () => database?.drop());

  it("on SIGTERM: /readyz 503 through the drain while requests are served, a kept connection answered once more with Connection: close, an idle one closed without a reset, a request arriving as the listener stops answered; exit 0", async () => {
    const s = await startOne(database, { SHUTDOWN_DRAIN_SECONDS: "2", SHUTDOWN_TIMEOUT_SECONDS: "10" });
    const port = Number(new URL(s.url).port);
    // A balancer's pooled connection, used before the signal and kept.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await send(`${s.url}/healthz`, { agent })).headers.connection).toBe("keep-alive");
    // An idle connection, answered before the signal, and one whose request is arriving (its headers incomplete).
    const idle = await rawConnection(port);
    idle.socket.write("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    await until(() => idle.received().includes('{"status":"ok"}'), 5000);
    const arriving = await rawConnection(port);
    arriving.socket.write("GET /healthz HTTP/1.1\r\nHost: t\r\n");
    await sleep(200);

    const exited = exitOf(s);
    const signalledAt = performance.now();
    s.child.kill("SIGTERM");

    // The health check, on connections of its own: 200 only until the signal is handled, then 503 until the listener stops.
    const checks: Array<{ at: number; status: number | string }> = [];
    const checking = (async () => {
      for (;;) {
        const at = performance.now() - signalledAt;
        try {
          const answer = await send(`${s.url}/readyz`, { agent: false });
          checks.push({ at, status: answer.status });
          if (answer.status === 503) expect(JSON.parse(answer.body)).toEqual({ status: "stopping" });
        } catch (e) {
          checks.push({ at, status: (e as NodeJS.ErrnoException).code ?? String(e) });
          return;
        }
        await sleep(100);
      }
    })();

    // During the drain, the kept connection still serves a request: answered, and told that it closes.
    await sleep(500);
    const again = await send(`${s.url}/healthz`, { agent });
    expect(again).toMatchObject({ status: 200, reusedSocket: true });
    expect(again.headers.connection).toBe("close");
    expect((await send(`${s.url}/healthz`, { agent: false })).status).toBe(200);

    await checking;
    const refusedAt = checks.at(-1)!.at;
    expect(checks.at(-1)!.status, JSON.stringify(checks)).toBe("ECONNREFUSED");
    const firstStopping = checks.findIndex((c) => c.status === 503);
    expect(firstStopping, JSON.stringify(checks)).toBeGreaterThanOrEqual(0);
    expect(checks[firstStopping]!.at).toBeLessThan(1000);
    expect(checks.slice(firstStopping, -1).every((c) => c.status === 503), JSON.stringify(checks)).toBe(true);
    expect(refusedAt, JSON.stringify(checks)).toBeGreaterThan(1900);

    // The listener has stopped: the arriving request completes, and is answered and closed.
    arriving.socket.write("\r\n");
    await expect(arriving.ended).resolves.toEqual({ at: expect.any(Number) });
    expect(arriving.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(arriving.received()).toMatch(/\r\nConnection: close\r\n/i);
    // The idle connection: closed by the server (FIN, not a reset) once the drain was over, nothing more sent on it.
    const idleEnd = await idle.ended;
    expect(idleEnd.error).toBeUndefined();
    expect(idleEnd.at - signalledAt).toBeGreaterThan(1900);
    expect(idle.received().match(/HTTP\/1\.1/g)).toHaveLength(1);

    const { code, at } = await exited;
    expect(code).toBe(0);
    expect(at - signalledAt).toBeLessThan(6000);
    expect(logged(s, "shut down")).toHaveLength(1);
    agent.destroy();
  }, 60_000);

  it("a request still arriving at SHUTDOWN_TIMEOUT_SECONDS is cut and logged, and the process exits then (code 1); nothing of it is recorded", async () => {
    const s = await startOne(database, { SHUTDOWN_DRAIN_SECONDS: "1", SHUTDOWN_TIMEOUT_SECONDS: "4" });
    const hook = await hooked(createApiClient({ baseUrl: s.url, credentials: ADMIN }), [evaluateStep("double", { n: "ctx.trigger.n * 2.0" })]);
    const eventId = randomUUID();
    const body = JSON.stringify({ n: 1, pad: "x".repeat(400) });
    const headers = webhookHeaders(hook.secret, eventId, body);

    // An upload trickling in, a byte every 100 ms: 40 s to arrive. The server's 100 Continue says it has the headers.
    let trickle: NodeJS.Timeout | undefined;
    const answered = new Promise<string>((resolve) => {
      const req = request(`${s.url}${hook.path}`, { method: "POST", agent: false, headers: { ...headers, "Content-Length": String(Buffer.byteLength(body)), Expect: "100-continue" } }, (res) => {
        res.resume();
        res.on("end", () => resolve(`answered ${res.statusCode}`));
      });
      req.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.on("continue", () => {
        let sent = 0;
        trickle = setInterval(() => {
          if (sent < body.length && !req.destroyed) req.write(body[sent++]);
        }, 100);
      });
      req.flushHeaders();
    });
    await until(() => trickle !== undefined, 5000);
    await sleep(300);

    const exited = exitOf(s);
    const signalledAt = performance.now();
    s.child.kill("SIGTERM");
    const exit = await Promise.race([exited, sleep(9000).then(() => undefined)]);
    clearInterval(trickle);
    expect(exit, "the process exits by its shutdown deadline").toBeDefined();
    expect(exit!.code).toBe(1);
    expect(exit!.at - signalledAt).toBeGreaterThan(3800);
    expect(exit!.at - signalledAt).toBeLessThan(5500);
    expect(await answered).not.toMatch(/^answered/);
    const [cut] = logged(s, "shutdown timed out: exiting with work unfinished");
    expect(cut).toMatchObject({ timeoutSeconds: 4, requests: [{ method: "POST", path: hook.path, bodyComplete: false }], executions: [] });

    // Nothing of it was recorded: the same event is new to the next server.
    const next = await startOne(database, { SHUTDOWN_DRAIN_SECONDS: "0" });
    const resent = await send(`${next.url}${hook.path}`, { method: "POST", headers: webhookHeaders(hook.secret, eventId, body), body, agent: false });
    expect(resent.status, resent.body).toBe(200);
    await next.stop();
  }, 60_000);

  it("a second signal, a second or more after the first, exits at once (code 1); the same signal repeated within a second does not", async () => {
    // As npm forwards a terminal's Ctrl-C that the server got too: the same signal a moment later.
    // A starved machine may send the two, or the server handle them, over a second apart, which is a
    // second signal (the server logs how far apart it saw them): that start proves nothing, and
    // another is tried.
    let s: Served | undefined;
    let exited: ReturnType<typeof exitOf> | undefined;
    for (let attempt = 0; attempt < 4 && !s; attempt++) {
      const started = await startOne(database, { SHUTDOWN_DRAIN_SECONDS: "20", SHUTDOWN_TIMEOUT_SECONDS: "30" });
      const ended = exitOf(started);
      const firstAt = performance.now();
      started.child.kill("SIGINT");
      await sleep(100);
      started.child.kill("SIGINT");
      const sentApart = performance.now() - firstAt;
      await sleep(1400);
      const handledApart = logged(started, "second signal: exiting at once").map((line) => Number(line.sinceFirstMs));
      if (sentApart < 500 && !handledApart.some((ms) => ms >= 1000)) [s, exited] = [started, ended];
      else {
        started.child.kill("SIGKILL");
        await ended;
      }
    }
    if (!s || !exited) throw new Error("the machine never let two signals go, and be handled, within a second");
    expect(s.child.exitCode).toBeNull();
    // A probe's connection reset while a starved machine lingers past the server's half-close is sent again once.
    const probe = () => send(`${s!.url}/readyz`, { agent: false });
    const ready = await probe().catch((err: NodeJS.ErrnoException) => (err.code === "ECONNRESET" ? probe() : Promise.reject(err)));
    expect(ready.status).toBe(503);
    // The first signal was handled before that answer: a second more, whatever the machine's load.
    await sleep(1100);
    const signalledAt = performance.now();
    s.child.kill("SIGTERM");
    const { code, at } = await exited;
    expect(code).toBe(1);
    expect(at - signalledAt).toBeLessThan(1500);
    expect(logged(s, "second signal: exiting at once")).toMatchObject([{ signal: "SIGTERM", sinceFirstMs: expect.any(Number), requests: [], executions: [] }]);
  }, 180_000);
});

/**
 * A load balancer over instances: keep-alive connections to each, a health check of each on
 * `/readyz` every 200 ms on a connection of its own, and requests sent round robin to the healthy.
 */
class Balancer {
  readonly healthy: boolean[];
  private readonly agents: Agent[];
  private readonly checks: NodeJS.Timeout;
  private next = 0;

  constructor(private readonly urls: string[]) {
    this.healthy = urls.map(() => true);
    this.agents = urls.map(() => new Agent({ keepAlive: true, maxSockets: 8 }));
    this.checks = setInterval(() => urls.forEach((url, i) => void this.check(url, i)), 200);
  }

  private async check(url: string, i: number): Promise<void> {
    try {
      this.healthy[i] = (await send(`${url}/readyz`, { agent: false })).status === 200;
    } catch {
      this.healthy[i] = false;
    }
  }

  /** Sends to the next healthy instance; answers which, and the answer or the error. */
  async send(path: string, options: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ instance: number; answer?: Answer; error?: string }> {
    const candidates = this.urls.map((_, i) => i).filter((i) => this.healthy[i]);
    const instance = candidates[this.next++ % candidates.length] ?? 0;
    try {
      return { instance, answer: await send(`${this.urls[instance]}${path}`, { ...options, agent: this.agents[instance]! }) };
    } catch (e) {
      return { instance, error: (e as NodeJS.ErrnoException).code ?? String(e) };
    }
  }

  close(): void {
    clearInterval(this.checks);
    for (const agent of this.agents) agent.destroy();
  }
}

describe(`two instances on one ${testDialect()} database, one of them stopped`, () => {
  let cluster: Instances | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  it("under steady webhook and API load through a balancer, SIGTERM to one: no request that reached it is reset or answered 5xx, every accepted event runs exactly once, what it released runs elsewhere within a second", async () => {
    cluster = await startInstances(2, ADMIN, BASE_URL, { SHUTDOWN_DRAIN_SECONDS: "2", SHUTDOWN_TIMEOUT_SECONDS: "15", RATE_LIMIT: "off", LOG_LEVEL: "info" });
    const [, stopped] = cluster.instances;
    const admin = cluster.clients[0]!;
    const hook = await hooked(admin, [evaluateStep("double", { n: "ctx.trigger.n * 2.0" })]);
    const form = new URLSearchParams({ grant_type: "client_credentials", client_id: ADMIN.clientId, client_secret: ADMIN.clientSecret }).toString();
    const granted = await send(`${cluster.instances[0]!.url}/auth/v1/token`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: form, agent: false });
    const token = JSON.parse(granted.body) as { access_token: string };

    const balancer = new Balancer(cluster.instances.map((i) => i.url));
    const results: Array<{ instance: number; at: number; kind: string; status?: number; error?: string; eventId?: string }> = [];
    let loading = true;
    let n = 0;
    const loops = Array.from({ length: 6 }, async (_, loop) => {
      for (let turn = 0; loading; turn++) {
        const at = performance.now();
        if ((turn + loop) % 2 === 0) {
          const eventId = randomUUID();
          const body = JSON.stringify({ n: ++n });
          const r = await balancer.send(hook.path, { method: "POST", headers: webhookHeaders(hook.secret, eventId, body), body });
          results.push({ instance: r.instance, at, kind: "webhook", status: r.answer?.status, error: r.error, eventId });
        } else {
          const r = await balancer.send("/api/v1/users?page_size=5", { headers: { Authorization: `Bearer ${token.access_token}` } });
          results.push({ instance: r.instance, at, kind: "api", status: r.answer?.status, error: r.error });
        }
      }
    });

    await sleep(1500);
    const exited = exitOf(stopped!);
    const signalledAt = performance.now();
    stopped!.child.kill("SIGTERM");
    const { code, at: exitedAt } = await exited;
    await sleep(500);
    loading = false;
    await Promise.all(loops);
    balancer.close();

    const failed = results.filter((r) => r.error !== undefined || (r.status ?? 0) >= 500);
    expect(failed).toEqual([]);
    expect(code).toBe(0);
    expect(exitedAt - signalledAt).toBeLessThan(6000);
    const toStopped = results.filter((r) => r.instance === 1);
    expect(toStopped.filter((r) => r.at < signalledAt).length).toBeGreaterThan(10);
    expect(results.filter((r) => r.at > exitedAt).length).toBeGreaterThan(10);

    // Every accepted event, on either instance: one execution, finished, run once.
    const accepted = results.filter((r) => r.kind === "webhook" && r.status === 200);
    const executions = await finished(admin, hook.id, accepted.length);
    expect(executions).toHaveLength(accepted.length);
    expect(new Set(executions.map((e) => e.eventId))).toEqual(new Set(accepted.map((r) => r.eventId)));
    expect(executions.every((e) => e.state === "AUTOMATION_EXECUTION_STATE_DONE" && e.stepResults[0]?.state === "STEP_STATE_DONE")).toBe(true);

    // What the stopped instance released was run by the other within a second.
    for (const release of logged(stopped!, "released executions")) {
      const releasedAt = Date.parse(String(release.time));
      for (const id of release.executionIds as string[]) {
        const execution = executions.find((e) => e.id === id)!;
        expect(Date.parse(execution.completedAt!) - releasedAt, id).toBeLessThan(1000);
      }
    }
  }, 120_000);

  it.runIf(testDialect() === "postgres")(
    "executions one instance holds and has not begun are released on SIGTERM and run by the other within a second; its run under way finishes before it exits",
    async () => {
      // No lock_timeout: the run under way is kept going by a lock the test holds past it.
      // One run at a time per instance: what the stopping one is handed while its run waits is not begun.
      cluster = await startInstances(2, ADMIN, BASE_URL, { SHUTDOWN_DRAIN_SECONDS: "2", SHUTDOWN_TIMEOUT_SECONDS: "20", RATE_LIMIT: "off", LOG_LEVEL: "info", DATABASE_LOCK_TIMEOUT_MS: "0", EXECUTION_WORKER_RUNS: "1" });
      const [, stopped] = cluster.instances;
      const admin = cluster.clients[0]!;
      const { user } = unwrap(await admin.POST("/api/v1/users", { body: { displayName: "Held", email: `held-${randomUUID()}@example.com`, roles: ["ROLE_USER"] } }));
      const appId = newAppId();
      unwrap(await funds(admin).setLimit(user.id!, appId, { limit: amount("100") }));
      const blocking = await hooked(admin, [{ stepName: "suspend", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId" } }]);
      const quick = await hooked(admin, [evaluateStep("double", { n: "ctx.trigger.n * 2.0" })]);

      // The limit's lock, held here: the stopping instance's run of `blocking` waits for it, and its
      // worker, its one slot held, runs nothing else meanwhile: what it is handed waits.
      const holder = new pg.Client({ connectionString: cluster.database.url });
      await holder.connect();
      try {
        await holder.query("select pg_advisory_lock(hashtextextended($1, 0))", [`subject_app_limits:${user.id}:${appId}`]);
        const deliver = async (hook: { path: string; secret: string }, payload: unknown) => {
          const body = JSON.stringify(payload);
          const answer = await send(`${stopped!.url}${hook.path}`, { method: "POST", headers: webhookHeaders(hook.secret, randomUUID(), body), body, agent: false });
          expect(answer.status, answer.body).toBe(200);
          return (JSON.parse(answer.body) as { webhookEvent: { automationExecutionId: string } }).webhookEvent.automationExecutionId;
        };
        const held = await deliver(blocking, { userId: user.id, appId });
        await sleep(300);
        const waiting = [];
        for (let i = 0; i < 5; i++) waiting.push(await deliver(quick, { n: i }));
        // Held by the stopping instance: the other does not run them (their lease has 60 s to go).
        await sleep(1200);
        const before = await executionsOf(admin, quick.id);
        expect(before.map((e) => e.state)).toEqual(waiting.map(() => "AUTOMATION_EXECUTION_STATE_RUNNING"));

        const exited = exitOf(stopped!);
        const signalledAt = performance.now();
        stopped!.child.kill("SIGTERM");
        await sleep(1000 - (performance.now() - signalledAt));
        const after = await executionsOf(admin, quick.id);
        expect(after.map((e) => e.state)).toEqual(waiting.map(() => "AUTOMATION_EXECUTION_STATE_DONE"));
        expect(logged(stopped!, "released executions").flatMap((l) => l.executionIds as string[]).sort()).toEqual([...waiting].sort());
        // The run under way still waits for the lock, and keeps the instance until it finishes.
        expect(unwrap(await automationsApi(admin).execution(held)).automationExecution.state).toBe("AUTOMATION_EXECUTION_STATE_RUNNING");
        await sleep(2000);
        expect(stopped!.child.exitCode).toBeNull();

        await holder.query("select pg_advisory_unlock(hashtextextended($1, 0))", [`subject_app_limits:${user.id}:${appId}`]);
        expect((await exited).code).toBe(0);
        const run = unwrap(await automationsApi(admin).execution(held)).automationExecution;
        expect(run).toMatchObject({ state: "AUTOMATION_EXECUTION_STATE_DONE", stepResults: [{ state: "STEP_STATE_DONE" }] });
        expect(unwrap(await funds(admin).get(user.id!, appId)).limit.controls?.suspension).not.toBeNull();
      } finally {
        await holder.end();
      }
    },
    120_000,
  );
});
