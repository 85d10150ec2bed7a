// The database unavailable for the moment is 503 UNAVAILABLE with Retry-After, the contract's
// Status body and a warning in the log, never a 500 nor the database's address; the service
// resumes by itself once the database is back. Each case makes it happen for real, over HTTP:
// - PostgreSQL, contention: authorizations wait on the subject and app's spend lock that the test holds
//   until they hold every connection of a small pool; the next requests wait for a connection past
//   the pool's timeout. One waiting authorization's backend is then terminated (57P01).
// - PostgreSQL, down: the server reaches its database through the test's TCP proxy, which the test
//   closes (connections reset, new ones refused) and opens again; or that loses the reply to the
//   statement that committed a decision (its one call, or a transaction's COMMIT), after which the
//   retry with the same Idempotency-Key must replay, not spend again.
// - PostgreSQL, frozen: the proxy keeps every connection open but lets nothing through (a dead host,
//   a network dropping everything), then lets new connections through (a failover): requests in
//   flight are answered within the timeouts, /readyz says why it is not ready, and the execution
//   worker resumes by itself. Also a statement past statement_timeout, the database refusing
//   connections (ALLOW_CONNECTIONS false), and a worker stuck while the database answers.
// - SQLite: another connection (as another process would) holds the write lock past the busy timeout.
import { randomUUID } from "node:crypto";
import SQLite from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { HEARTBEAT_MS } from "../../../src/storage/live-instances.js";
import { POSTGRES_ADMIN_URL, testDialect } from "../../support/database.js";
import { BOOTSTRAP, logCapture, startTestServer } from "../../support/server.js";
import { COMMIT, TcpProxy } from "../../support/tcp-proxy.js";
import { fundAutomation } from "../automations/fund-events-helpers.js";
import { amount, expectError, funds, money, newAppId } from "../limits/helpers.js";
import { spends } from "../spends/helpers.js";
import { createHooked, evaluateStep, eventsOf, executionsOf, expectRefused, newEventId, sendHmac } from "../webhooks/helpers.js";

interface Answer {
  error?: unknown;
  response: Response;
}

/** 503 UNAVAILABLE in the contract's Status body, with Retry-After, naming no database. */
function expectUnavailable(answer: Answer, databaseUrl: string): void {
  expectError(answer, 503, "UNAVAILABLE");
  expect(answer.error).toMatchObject({ code: 14, message: "the service is temporarily unavailable; retry after the time in Retry-After" });
  expect(answer.response.headers.get("retry-after")).toBe("1");
  expect(JSON.stringify(answer.error)).not.toContain(new URL(databaseUrl.replace(/^sqlite:/, "file:")).pathname);
}

/** The log holds warnings of the database unavailable (with these causes among them), no internal error and no database address. */
function expectWarnings(log: string, databaseUrl: string, causes: string[]): void {
  const lines = log.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string; cause?: string; err?: unknown });
  const warnings = lines.filter((l) => l.msg === "database unavailable");
  expect(warnings.length).toBeGreaterThan(0);
  expect(warnings.every((w) => w.level === 40 && w.err === undefined)).toBe(true);
  for (const cause of causes) expect(warnings.map((w) => w.cause), log).toContain(cause);
  expect(lines.filter((l) => l.msg === "internal error")).toEqual([]);
  expect(log).not.toContain(databaseUrl.replace(/^sqlite:/, ""));
  expect(log).not.toMatch(/postgres:\/\//);
}

/** A token request over HTTP, answered as it comes. */
const tokenRequest = (url: string) =>
  fetch(`${url}/auth/v1/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret }),
  });

/** /readyz's status and body, and how long it took to answer. */
async function readyz(url: string): Promise<{ status: number; body: unknown; ms: number }> {
  const started = performance.now();
  const answer = await fetch(`${url}/readyz`);
  return { status: answer.status, body: await answer.json(), ms: performance.now() - started };
}

/** Backends of the test's database (but the asking one) waiting on a lock. */
const LOCK_WAITERS = "select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()";

/** Log lines with this message. */
const logged = (log: string, msg: string) => log.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { msg: string; level: number; cause?: string }).filter((l) => l.msg === msg);

const DONE = "AUTOMATION_EXECUTION_STATE_DONE";

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.runIf(testDialect() === "postgres")("PostgreSQL", () => {
  it("contention: with every connection held by authorizations waiting on the subject and app's spend lock, the next requests are 503 UNAVAILABLE; a terminated backend too; then all is served", async () => {
    const POOL = 2;
    const logs = logCapture();
    const ts = await startTestServer({ DATABASE_POOL_SIZE: String(POOL), DATABASE_POOL_TIMEOUT_MS: "300", RATE_LIMIT: "off" }, logs.stream);
    const locker = new pg.Client({ connectionString: ts.databaseUrl });
    await locker.connect();
    try {
      const spend = spends(ts.admin);
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("contended");
      unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100") }));
      const body = { userId, appId, amount: money("1") };
            const first = unwrap(await spend.authorize(body)).authorization;

      await locker.query("begin");
      await locker.query("select spend_lock_subject_app($1, $2)", [userId, appId]);
      const waiting = Array.from({ length: POOL }, () => spend.authorize(body));
      const waitingPids = async () =>
        (
          await locker.query<{ pid: number }>(
            "select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid() order by pid",
          )
        ).rows.map((r) => r.pid);
      await until(async () => (await waitingPids()).length === POOL, "the authorizations to hold every connection");

      // No connection comes free within the pool's timeout: a write, a read, the token endpoint.
      const key = randomUUID();
      expectUnavailable(await spend.authorize(body, key), ts.databaseUrl);
      expectUnavailable(await spend.get(first.id), ts.databaseUrl);
      const token = await tokenRequest(ts.url);
      expect(token.status).toBe(503);
      expect(token.headers.get("retry-after")).toBe("1");
      expect(token.headers.get("cache-control")).toBe("no-store");
      expect(await token.json()).toMatchObject({ code: 14, details: [{ reason: "UNAVAILABLE" }, {}] });

      // A backend ended by an administrator while its authorization waits (57P01): nothing of it is kept.
      const [terminated] = await waitingPids();
      await locker.query("select pg_terminate_backend($1)", [terminated]);
      await locker.query("rollback");
      const answers = await Promise.all(waiting);
      expect(answers.map((a) => a.response.status).sort()).toEqual([200, 503]);
      for (const a of answers.filter((a) => a.response.status === 503)) expectUnavailable(a, ts.databaseUrl);

      // Served again: the refused key was never used, so its retry runs; the usage counts what was approved.
      const retried = unwrap(await spend.authorize(body, key)).authorization;
      expect(retried.decision.approved).toBe(true);
      expect(retried.decision.usage.held).toEqual(money("3"));
      expect(unwrap(await spend.get(first.id)).authorization.id).toBe(first.id);
      expect((await tokenRequest(ts.url)).status).toBe(200);
      expectWarnings(logs.text(), ts.databaseUrl, ["pool-timeout"]);
    } finally {
      await locker.end().catch(() => undefined);
      await ts.stop();
    }
  });

  it("down: a connection lost under a request, connections refused: 503 UNAVAILABLE (the token endpoint's too), /readyz says unavailable; served again once the database is back", async () => {
    const proxy = new TcpProxy();
    const logs = logCapture();
    const ts = await startTestServer({ DATABASE_POOL_TIMEOUT_MS: "2000", RATE_LIMIT: "off" }, logs.stream, { reachDatabase: (url) => proxy.start(url) });
    const locker = new pg.Client({ connectionString: ts.databaseUrl });
    await locker.connect();
    try {
      const admin = funds(ts.admin);
      const spend = spends(ts.admin);
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("down");
      unwrap(await admin.setLimit(userId, appId, { limit: amount("100") }));
      const body = { userId, appId, amount: money("1") };
      unwrap(await spend.authorize(body));
      expect(await (await fetch(`${ts.url}/readyz`)).json()).toEqual({ status: "ready" });

      // An authorization waits on the spend lock (the test's own connection, not through the proxy,
      // holds it) when the connections are reset. It waits in a transaction (the one call does not
      // wait for a held lock), whose COMMIT is never sent: nothing of it is kept.
      await locker.query("begin");
      await locker.query("select spend_lock_subject_app($1, $2)", [userId, appId]);
      const inFlight = spend.authorize(body);
      await until(
        async () => (await locker.query("select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()")).rowCount === 1,
        "the authorization to wait on the spend lock",
      );
      await proxy.cut();
      expectUnavailable(await inFlight, ts.databaseUrl);
      await locker.query("rollback");

      // The policy is served from what the instance keeps (the authorizations read it) until its polls fail (within a second), then refused.
      await until(async () => (await admin.policyGet()).response.status !== 200, "the policy to be read from the database");
      expectUnavailable(await admin.policyGet(), ts.databaseUrl);
      expectUnavailable(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", timeZone: "Europe/Paris", defaultControls: null }, updateMask: "timeZone" }), ts.databaseUrl);
      const token = await tokenRequest(ts.url);
      expect(token.status).toBe(503);
      expect(token.headers.get("retry-after")).toBe("1");
      const tokenBody = (await token.json()) as Record<string, unknown>;
      expect(tokenBody).toMatchObject({ code: 14, details: [{ reason: "UNAVAILABLE" }, {}] });
      expect(tokenBody).not.toHaveProperty("error");
      const ready = await fetch(`${ts.url}/readyz`);
      expect([ready.status, await ready.json()]).toEqual([503, { status: "unavailable", reasons: ["database-unreachable"] }]);

      await proxy.restore();
      expect(unwrap(await admin.policyGet()).fundPolicy.currencyCode).toBe("USD");
      // The lost authorization kept nothing: one hold of 1 before it, this one now.
      expect(unwrap(await spend.authorize(body)).authorization.decision.usage.held).toEqual(money("2"));
      expect((await tokenRequest(ts.url)).status).toBe(200);
      expect((await fetch(`${ts.url}/readyz`)).status).toBe(200);
      expectWarnings(logs.text(), proxy.url, ["ECONNREFUSED"]);
    } finally {
      await locker.end().catch(() => undefined);
      await proxy.restore();
      await ts.stop();
      await proxy.close();
    }
  });

  // The decision commits with its one call; with a fund-event trigger listening it runs in a transaction, which commits with its COMMIT.
  it.each([
    { what: "spend_authorize (the one call)", statement: /\bspend_authorize\(/, listened: false },
    { what: "COMMIT (fund events listened to)", statement: COMMIT, listened: true },
  ])("the answer to $what lost: 503 UNAVAILABLE, and the retry with the same Idempotency-Key replays the authorization committed, never a second one", async ({ statement, listened }) => {
    const proxy = new TcpProxy();
    const ts = await startTestServer({ RATE_LIMIT: "off" }, undefined, { reachDatabase: (url) => proxy.start(url) });
    try {
      const spend = spends(ts.admin);
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("answer-lost");
      unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100") }));
      if (listened) await fundAutomation(ts.admin, { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED"], conditionCel: `ctx.trigger.appId == "${appId}"` });
      const body = { userId, appId, amount: money("1") };
      const key = randomUUID();

      const lost = proxy.loseNextAnswerTo(statement);
      expectUnavailable(await spend.authorize(body, key), ts.databaseUrl);
      await lost;

      const retried = await spend.authorize(body, key);
      expect(retried.response.headers.get("idempotent-replayed")).toBe("true");
      const { authorization } = unwrap(retried);
      expect(authorization.decision.usage.held).toEqual(money("1"));
      expect(unwrap(await spend.list({ user_id: userId, app_id: appId })).list.map((i) => i.authorization.id)).toEqual([authorization.id]);
    } finally {
      await ts.stop();
      await proxy.close();
    }
  });

  it("frozen: connections that go silent without closing (a dead host, a failover); requests in flight answered 503 within the timeouts, /readyz 503 naming the database; once new connections go through, ready again and every event accepted before, during and after runs exactly once within seconds", async () => {
    const POOL_TIMEOUT_MS = 1_000;
    const QUERY_TIMEOUT_MS = 2_000;
    // The longest a request may take: a connection of the pool, then a query on one that went silent, with room for a busy machine.
    const ANSWERED_WITHIN_MS = POOL_TIMEOUT_MS + QUERY_TIMEOUT_MS + 2_000;
    const PASSWORD = "never-logged-5d2a9c";
    const proxy = new TcpProxy();
    const logs = logCapture();
    const withPassword = (url: string) => Object.assign(new URL(url), { password: PASSWORD }).toString();
    const ts = await startTestServer(
      {
        DATABASE_POOL_TIMEOUT_MS: String(POOL_TIMEOUT_MS),
        DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
        DATABASE_STATEMENT_TIMEOUT_MS: "1500",
        DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: "1000",
        RATE_LIMIT: "off",
      },
      logs.stream,
      { reachDatabase: async (url) => withPassword(await proxy.start(url)) },
    );
    const locker = new pg.Client({ connectionString: ts.databaseUrl });
    await locker.connect();
    try {
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const heldApp = newAppId("held");
      unwrap(await funds(ts.admin).setLimit(userId, heldApp, { limit: amount("100") }));
      const hook = await createHooked(ts, {
        steps: [
          { stepName: "suspend", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId" } },
          evaluateStep("report", { app: "ctx.steps.suspend.limit.appId" }),
        ],
      });
      // Every event id sent, with its app; those recorded (200, or 409 when sent again); those whose outcome is unknown (503) until sent again.
      const apps = new Map<string, string>();
      const recorded = new Set<string>();
      const unknown = new Set<string>();
      const deliver = async (eventId = newEventId(), appId = newAppId("event")): Promise<{ status: number; ms: number }> => {
        apps.set(eventId, appId);
        const started = performance.now();
        const answer = await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ userId, appId }), { eventId });
        const ms = performance.now() - started;
        if (answer.status === 200 || answer.status === 409) {
          recorded.add(eventId);
          unknown.delete(eventId);
        } else {
          expectRefused(answer, 503, "UNAVAILABLE");
          unknown.add(eventId);
        }
        return { status: answer.status, ms };
      };

      // Before.
      for (let i = 0; i < 5; i++) expect((await deliver()).status).toBe(200);

      // In flight when everything goes silent: an execution's step and an API request, both waiting
      // on the lock of (userId, heldApp) that the test holds on a connection of its own.
      await locker.query("begin");
      await locker.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [`subject_app_limits:${userId}:${heldApp}`]);
      expect((await deliver(newEventId(), heldApp)).status).toBe(200);
      const request = funds(ts.admin).setLimit(userId, heldApp, { limit: amount("999") });
      await until(async () => (await locker.query(LOCK_WAITERS)).rowCount === 2, "the step and the request to wait on the lock");
      proxy.freeze();
      const frozenAt = performance.now();
      // The database goes on: the frozen sessions get the lock, then wait in their transactions for
      // the server, which will never speak again (idle_in_transaction_session_timeout ends them).
      await locker.query("rollback");

      expectUnavailable(await request, ts.databaseUrl);
      expect(performance.now() - frozenAt).toBeLessThan(ANSWERED_WITHIN_MS);
      // During.
      for (let i = 0; i < 3; i++) {
        const { status, ms } = await deliver();
        expect(status).toBe(503);
        expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
      }
      const frozenReady = await readyz(ts.url);
      expect([frozenReady.status, frozenReady.body]).toEqual([503, { status: "unavailable", reasons: ["database-unreachable"] }]);
      expect(frozenReady.ms).toBeLessThan(ANSWERED_WITHIN_MS);

      proxy.heal();
      const healedAt = performance.now();
      await until(async () => (await readyz(ts.url)).status === 200, "/readyz to answer ready after the heal");
      // After: accepted at once; those answered 503 are sent again: recorded now, or already (409).
      for (let i = 0; i < 5; i++) expect((await deliver()).status).toBe(200);
      for (const eventId of [...unknown]) await deliver(eventId, apps.get(eventId));
      expect([...unknown]).toEqual([]);

      // Each recorded event has one execution, and all end DONE, every step done, within seconds of the heal.
      const settledAll = async () => (await executionsOf(ts.admin, hook.id)).filter((e) => e.state === DONE).length === recorded.size;
      await until(settledAll, "every execution to end", 10_000);
      expect(performance.now() - healedAt).toBeLessThan(12_000);
      const events = (await eventsOf(ts.admin, hook.id)).filter((e) => recorded.has(e.eventId));
      expect(events.map((e) => e.eventId).sort()).toEqual([...recorded].sort());
      const executions = await executionsOf(ts.admin, hook.id);
      expect(executions.map((e) => e.id).sort()).toEqual(events.map((e) => e.automationExecutionId).sort());
      for (const e of executions) {
        expect(e.state).toBe(DONE);
        expect(e.stepResults.map((r) => r.state)).toEqual(["STEP_STATE_DONE", "STEP_STATE_DONE"]);
      }
      // The step's effect is there (the request in flight is one statement: its 503 leaves its outcome unknown, as a lost COMMIT would).
      expect(unwrap(await funds(ts.admin).get(userId, heldApp)).limit.controls?.suspension).not.toBeNull();

      const log = logs.text();
      expectWarnings(log, proxy.url, []);
      expect(logged(log, "database unreachable").map((l) => l.level)).toEqual([40]);
      expect(logged(log, "database reachable again").map((l) => l.level)).toEqual([40]);
      expect(logged(log, "executions paused: database unavailable").length).toBeGreaterThan(0);
      expect(logged(log, "executions resumed: the database answers again").length).toBeGreaterThan(0);
      expect(log).not.toContain(PASSWORD);
    } finally {
      await locker.end().catch(() => undefined);
      await ts.stop();
      await proxy.close();
    }
  });

  it("a restart (every session terminated, connections refused for 6 s, then back): the log holds no error and no stack trace, and one warning per task that met it, whatever the number of its failures; a fault that is not temporary is an error with its stack, once per run of failures", async () => {
    const proxy = new TcpProxy();
    const logs = logCapture();
    // Every task that reads the database in the background runs several times during the outage:
    // the pings (1 s), the four change polls (250 ms), the worker's claims (500 ms), the heartbeat
    // (5 s: rate limits on), and here the signing keys' upkeep and the execution sweep (250 ms).
    const ts = await startTestServer({ RATE_LIMIT: "on" }, logs.stream, {
      reachDatabase: (url) => proxy.start(url),
      signingKeysReloadMs: 250,
      retentionPace: { intervalMs: 250 },
    });
    const name = new URL(ts.databaseUrl).pathname.slice(1);
    const maintenance = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await maintenance.connect();
    try {
      unwrap(await funds(ts.admin).policyGet());
      const before = logs.text().length;
      // What a restart does to the server: its sessions end (57P01), then no connection is taken until the database is up again.
      await maintenance.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1", [name]);
      await proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      await proxy.restore();
      await until(async () => (await readyz(ts.url)).status === 200, "/readyz to answer ready after the restart");
      // The heartbeat, the rarest of them, has beaten again.
      await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS));
      unwrap(await funds(ts.admin).policyGet());

      const lines = logs.text().slice(before).split("\n").filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string; kind?: string; cause?: string; err?: unknown });
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
      expect(lines.filter((l) => l.err !== undefined)).toEqual([]);
      expect(logs.text()).not.toContain("stack");
      expect(logs.text()).not.toMatch(/127\.0\.0\.1:\d+/);
      // Eleven warnings: the outage's pair, the worker's pause and resumption, and one for each of the
      // seven tasks that failed many times over (the four change polls each 24 times or so) with the cause's label.
      const warnings = lines.filter((l) => l.level === 40);
      const unavailable = (task: string) => `${task} failed: database unavailable`;
      expect(warnings.map((w) => (w.kind ? `${w.msg} (${w.kind})` : w.msg)).sort()).toEqual(
        [
          "database unreachable",
          "database reachable again",
          "executions paused: database unavailable",
          "executions resumed: the database answers again",
          ...["principals", "fund_policy", "fund_triggers", "listeners"].map((kind) => `${unavailable("change poll")} (${kind})`),
          unavailable("instance heartbeat"),
          unavailable("signing key upkeep"),
          unavailable("automation execution sweep"),
        ].sort(),
      );
      expect(warnings.filter((w) => w.msg !== "database reachable again" && w.msg !== "executions resumed: the database answers again").every((w) => typeof w.cause === "string")).toBe(true);
      // Each task's recovery is an info line.
      expect(lines.filter((l) => l.msg.endsWith("succeeded again")).map((l) => [l.level, l.kind ? `${l.msg} (${l.kind})` : l.msg]).sort()).toEqual(
        [...["principals", "fund_policy", "fund_triggers", "listeners"].map((kind) => `change poll succeeded again (${kind})`), "instance heartbeat succeeded again", "signing key upkeep succeeded again", "automation execution sweep succeeded again"].map((m) => [30, m]).sort(),
      );

      // Not temporary: the table the change polls read is gone (a schema changed under this release).
      const fault = logs.text().length;
      const db = new pg.Client({ connectionString: ts.databaseUrl });
      await db.connect();
      try {
        await db.query("alter table change_versions rename to change_versions_away");
        await until(async () => logged(logs.text().slice(fault), "change poll failed").length === 4, "each change poll to fail");
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        await db.query("alter table change_versions_away rename to change_versions");
      } finally {
        await db.end();
      }
      await until(async () => logged(logs.text().slice(fault), "change poll succeeded again").length === 4, "each change poll to succeed again");
      const errors = logs.text().slice(fault).split("\n").filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string; kind?: string; err?: { stack?: string; code?: string } }).filter((l) => l.level >= 50);
      // One per poll for the run of failures (a poll every 250 ms for more than a second), each with its stack.
      expect(errors.map((e) => [e.msg, e.kind, e.level]).sort()).toEqual(["fund_policy", "fund_triggers", "listeners", "principals"].map((kind) => ["change poll failed", kind, 50]));
      for (const e of errors) expect([e.err?.code, e.err?.stack]).toEqual(["42P01", expect.stringContaining("\n    at ")]);
    } finally {
      await maintenance.end();
      await proxy.restore();
      await ts.stop();
      await proxy.close();
    }
  });

  it("a statement past statement_timeout (57014): 503 UNAVAILABLE, not a wait for as long as the lock is held", async () => {
    const logs = logCapture();
    const ts = await startTestServer({ DATABASE_STATEMENT_TIMEOUT_MS: "500", RATE_LIMIT: "off" }, logs.stream);
    const locker = new pg.Client({ connectionString: ts.databaseUrl });
    await locker.connect();
    try {
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("slow");
      unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100") }));
      await locker.query("begin");
      await locker.query("select spend_lock_subject_app($1, $2)", [userId, appId]);
      const started = performance.now();
      expectUnavailable(await spends(ts.admin).authorize({ userId, appId, amount: money("1") }), ts.databaseUrl);
      expect(performance.now() - started).toBeLessThan(3_000);
      await locker.query("rollback");
      expect(unwrap(await spends(ts.admin).authorize({ userId, appId, amount: money("1") })).authorization.decision.approved).toBe(true);
      expectWarnings(logs.text(), ts.databaseUrl, ["sqlstate 57014"]);
    } finally {
      await locker.end().catch(() => undefined);
      await ts.stop();
    }
  });

  it("the database refusing connections (ALLOW_CONNECTIONS false, SQLSTATE 55000): 503 UNAVAILABLE, not 500, and /readyz 503; served again once it accepts them", async () => {
    const logs = logCapture();
    const ts = await startTestServer({ RATE_LIMIT: "off" }, logs.stream);
    const name = new URL(ts.databaseUrl).pathname.slice(1);
    const maintenance = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await maintenance.connect();
    try {
      const admin = funds(ts.admin);
      unwrap(await admin.policyGet());
      await maintenance.query(`alter database ${name} allow_connections false`);
      // The connections already open are not affected: end them, as a restart or a failover does.
      await maintenance.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1", [name]);
      // Served from what the instance keeps until its polls fail (within a second), then refused.
      await until(async () => (await admin.policyGet()).response.status !== 200, "the policy to be read from the database");
      for (let i = 0; i < 3; i++) expectUnavailable(await admin.policyGet(), ts.databaseUrl);
      expectUnavailable(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", timeZone: "Europe/Paris", defaultControls: null }, updateMask: "timeZone" }), ts.databaseUrl);
      const refused = await readyz(ts.url);
      expect([refused.status, refused.body]).toEqual([503, { status: "unavailable", reasons: ["database-unreachable"] }]);

      await maintenance.query(`alter database ${name} allow_connections true`);
      expect(unwrap(await admin.policyGet()).fundPolicy.currencyCode).toBe("USD");
      expect((await readyz(ts.url)).status).toBe(200);
      expectWarnings(logs.text(), ts.databaseUrl, ["sqlstate 55000"]);
    } finally {
      await maintenance.query(`alter database ${name} allow_connections true`).catch(() => undefined);
      await maintenance.end();
      await ts.stop();
    }
  });

  it("workers stuck (no progress with runs due) while the database answers: /readyz 503 naming the workers; ready again once they progress", async () => {
    // No timeouts: a step waiting on a lock held elsewhere waits for as long as it is held.
    // One run at a time: the run that waits holds every slot, so nothing else can start (a stuck worker).
    const ts = await startTestServer({ DATABASE_STATEMENT_TIMEOUT_MS: "0", DATABASE_QUERY_TIMEOUT_MS: "0", RATE_LIMIT: "off", EXECUTION_WORKER_RUNS: "1" }, undefined, { workerStuckMs: 1_000 });
    const locker = new pg.Client({ connectionString: ts.databaseUrl });
    await locker.connect();
    try {
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("stuck");
      const hook = await createHooked(ts, { steps: [{ stepName: "suspend", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId" } }] });
      expect((await readyz(ts.url)).status).toBe(200);
      await locker.query("begin");
      await locker.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [`subject_app_limits:${userId}:${appId}`]);
      const accepted = await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ userId, appId }));
      expect(accepted.status).toBe(200);
      await until(async () => (await locker.query(LOCK_WAITERS)).rowCount === 1, "the step to wait on the lock");
      await until(async () => (await readyz(ts.url)).status === 503, "/readyz to answer 503");
      expect((await readyz(ts.url)).body).toEqual({ status: "unavailable", reasons: ["workers-stuck"] });

      await locker.query("rollback");
      await until(async () => (await readyz(ts.url)).status === 200, "/readyz to answer ready");
      await until(async () => (await executionsOf(ts.admin, hook.id)).every((e) => e.state === DONE), "the execution to end");
    } finally {
      await locker.end().catch(() => undefined);
      await ts.stop();
    }
  });
});

describe.runIf(testDialect() === "sqlite")("SQLite", () => {
  it("another process holding the write lock past the busy timeout: a write is 503 UNAVAILABLE, a read 200; once released, the write succeeds", async () => {
    const logs = logCapture();
    const ts = await startTestServer({ SQLITE_BUSY_TIMEOUT_MS: "50" }, logs.stream);
    const other = new SQLite(ts.databaseUrl.replace(/^sqlite:/, ""));
    try {
      const admin = funds(ts.admin);
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("busy");
      unwrap(await admin.setLimit(userId, appId, { limit: amount("100") }));

      other.exec("begin immediate");
      expectUnavailable(await admin.setLimit(userId, appId, { limit: amount("50") }), ts.databaseUrl);
      expectUnavailable(await spends(ts.admin).authorize({ userId, appId, amount: money("1") }), ts.databaseUrl);
      expect(unwrap(await admin.get(userId, appId)).limit).toMatchObject({ controls: { limit: amount("100") } });
      other.exec("rollback");

      expect(unwrap(await admin.setLimit(userId, appId, { limit: amount("50") })).limit).toMatchObject({ controls: { limit: amount("50") } });
      expectWarnings(logs.text(), ts.databaseUrl, ["SQLITE_BUSY"]);
    } finally {
      if (other.inTransaction) other.exec("rollback");
      other.close();
      await ts.stop();
    }
  });
});
