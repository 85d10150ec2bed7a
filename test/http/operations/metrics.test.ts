// The metrics listener of a real server (METRICS_PORT), scraped over HTTP after requests through the
// API: each series moves by what was done, under the labels it should, on SQLite and PostgreSQL.
import { request } from "node:http";
import SQLite from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage } from "../../../src/storage/connect.js";
import { testDialect } from "../../support/database.js";
import { scrape, type Scrape } from "../../support/metrics.js";
import { freePort } from "../../support/process.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { TcpProxy } from "../../support/tcp-proxy.js";
import { amount, funds, newAppId } from "../limits/helpers.js";
import { appWithLimit, money, spends } from "../spends/helpers.js";
import {
  createHooked,
  evaluateStep,
  expectAccepted,
  expectRefused,
  JwksHost,
  newEventId,
  postRaw,
  sendHmac,
  signClaims,
  signingKey,
  unixTime,
  webhookClaims,
} from "../webhooks/helpers.js";

const POLICY_GET = "svc.api.funds.v1.FundPolicyService.Get";
/** PostgreSQL: sessions of the test database waiting on a lock, other than the asking one. */
const LOCK_WAITERS = "select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()";

async function until(ok: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await ok())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const RECEIVE = "svc.api.webhooks.v1.IncomingWebhookService.Receive";

let ts: TestServer;
let metricsUrl: string;

beforeAll(async () => {
  // One failed authentication per listener and address a minute: the second is a 429.
  ts = await startTestServer({ METRICS_PORT: String(await freePort()), RATE_LIMIT_LISTENER_FAILURES: "1/60" });
  metricsUrl = ts.server.metricsUrl!;
});
afterAll(async () => ts?.stop());

/** The change of each sample `read` picks, from before `act` to after it (a sample not there yet counts as 0). */
async function moved(act: () => Promise<unknown>, read: Record<string, (s: Scrape) => number | undefined>, url = metricsUrl): Promise<Record<string, number>> {
  const before = await scrape(url);
  await act();
  const after = await scrape(url);
  return Object.fromEntries(Object.entries(read).map(([name, r]) => [name, (r(after) ?? 0) - (r(before) ?? 0)]));
}

describe("the metrics listener", () => {
  it("answers GET /metrics on its own port in Prometheus's text format, and 404 for anything else", async () => {
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(metricsUrl).port).not.toBe(new URL(ts.url).port);
    const s = await scrape(metricsUrl);
    expect(s.status).toBe(200);
    expect(s.contentType).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(s.text).toContain("# TYPE tenant_api_http_requests_total counter");
    const origin = new URL(metricsUrl).origin;
    for (const path of ["/", "/metrics/", "/healthz", "/api/v1/users", "/Metrics"]) expect((await fetch(origin + path)).status, path).toBe(404);
    expect((await fetch(metricsUrl, { method: "POST" })).status).toBe(404);
    expect((await fetch(`${metricsUrl}?name[]=up`)).status).toBe(200);
    // Never on the API's port.
    expect((await fetch(`${ts.url}/metrics`)).status).toBe(404);
  });

  it("counts requests per operation and status class with their latency, and error answers by reason", async () => {
    const policy = (s: Scrape) => s.value("tenant_api_http_requests_total", { operation: POLICY_GET, status_class: "2xx" });
    const d = await moved(
      async () => {
        for (let i = 0; i < 3; i++) unwrap(await ts.admin.GET("/api/v1/funds/policy"));
        expect((await ts.anonymous.GET("/api/v1/funds/policy")).response.status).toBe(401);
        expect((await fetch(`${ts.url}/api/v1/no-such-thing/abc123`)).status).toBe(404);
      },
      {
        policy,
        policyLatency: (s) => s.value("tenant_api_http_request_duration_seconds_count", { operation: POLICY_GET }),
        policyUnder10s: (s) => s.value("tenant_api_http_request_duration_seconds_bucket", { operation: POLICY_GET, le: "10" }),
        policy4xx: (s) => s.value("tenant_api_http_requests_total", { operation: POLICY_GET, status_class: "4xx" }),
        unmatched: (s) => s.value("tenant_api_http_requests_total", { operation: "unmatched", status_class: "4xx" }),
        missingToken: (s) => s.value("tenant_api_http_refusals_total", { reason: "MISSING_ACCESS_TOKEN" }),
        routeNotFound: (s) => s.value("tenant_api_http_refusals_total", { reason: "ROUTE_NOT_FOUND" }),
      },
    );
    expect(d).toEqual({ policy: 3, policyLatency: 4, policyUnder10s: 4, policy4xx: 1, unmatched: 1, missingToken: 1, routeNotFound: 1 });
  });

  it("counts webhook deliveries per authentication method and outcome, refusals by reason, and 429s by limit", async () => {
    const jwks = await JwksHost.start();
    try {
      const key = await signingKey("ES256", "metrics-key");
      const hmac = await createHooked(ts);
      const jwt = await createHooked(ts, { jwksUrl: jwks.serve("/jwks.json", [key.publicJwk]) });
      const body = '{"n":1}';
      const d = await moved(
        async () => {
          const eventId = newEventId();
          expectAccepted(await sendHmac(ts, hmac.url, hmac.secret, body, { eventId }));
          expectRefused(await sendHmac(ts, hmac.url, hmac.secret, body, { eventId }), 409, "DUPLICATE_EVENT");
          expectRefused(await sendHmac(ts, hmac.url, "not-the-secret", body), 401, "INVALID_SIGNATURE");
          expectRefused(await sendHmac(ts, hmac.url, "not-the-secret", body), 429, "TOO_MANY_FAILED_ATTEMPTS");
          expectRefused(await sendHmac(ts, `${ts.url}/api/v1/webhooks/incoming/wh_unknownListener1`, hmac.secret, body), 404, "LISTENER_NOT_FOUND");
          const jwtEvent = newEventId();
          const token = await signClaims(key, webhookClaims(ts, jwt.url, jwtEvent, body));
          const headers = { "Content-Type": "application/json", "Webhook-Timestamp": unixTime(ts), "Webhook-Event-Id": jwtEvent };
          expectAccepted(await postRaw(jwt.url, { headers: { ...headers, Authorization: `Bearer ${token}` }, body }));
          expectRefused(await postRaw(jwt.url, { headers: { ...headers, "Webhook-Event-Id": newEventId() }, body }), 401, "MISSING_AUTHORIZATION");
          await ts.server.worker.idle();
        },
        {
          hmacAccepted: (s) => s.value("tenant_api_webhook_deliveries_total", { auth_method: "hmac", outcome: "accepted" }),
          hmacDuplicate: (s) => s.value("tenant_api_webhook_deliveries_total", { auth_method: "hmac", outcome: "duplicate" }),
          hmacRefused: (s) => s.value("tenant_api_webhook_deliveries_total", { auth_method: "hmac", outcome: "refused" }),
          badSignature: (s) => s.value("tenant_api_webhook_refusals_total", { auth_method: "hmac", reason: "INVALID_SIGNATURE" }),
          // Refused before the listener is looked up: its method is not known yet.
          failures: (s) => s.value("tenant_api_webhook_refusals_total", { auth_method: "unknown", reason: "TOO_MANY_FAILED_ATTEMPTS" }),
          unknownListener: (s) => s.value("tenant_api_webhook_refusals_total", { auth_method: "unknown", reason: "LISTENER_NOT_FOUND" }),
          jwtAccepted: (s) => s.value("tenant_api_webhook_deliveries_total", { auth_method: "jwt", outcome: "accepted" }),
          jwtMissing: (s) => s.value("tenant_api_webhook_refusals_total", { auth_method: "jwt", reason: "MISSING_AUTHORIZATION" }),
          receive2xx: (s) => s.value("tenant_api_http_requests_total", { operation: RECEIVE, status_class: "2xx" }),
          limitedByFailures: (s) => s.value("tenant_api_http_rate_limited_total", { limit: "listener-failures" }),
        },
      );
      expect(d).toEqual({ hmacAccepted: 1, hmacDuplicate: 1, hmacRefused: 1, badSignature: 1, failures: 1, unknownListener: 1, jwtAccepted: 1, jwtMissing: 1, receive2xx: 2, limitedByFailures: 1 });
    } finally {
      await jwks.close();
    }
  });

  it("counts the executions finished by state and their lag from acceptance; the waiting and running gauges", async () => {
    const ok = await createHooked(ts, { steps: [evaluateStep("compute", { n: "ctx.trigger.n" })] });
    const failing = await createHooked(ts, { steps: [evaluateStep("divide", { n: "1 / ctx.trigger.zero" })] });
    const d = await moved(
      async () => {
        for (let i = 0; i < 3; i++) expectAccepted(await sendHmac(ts, ok.url, ok.secret, '{"n":2}'));
        expectAccepted(await sendHmac(ts, failing.url, failing.secret, '{"zero":0}'));
        await ts.server.worker.idle();
      },
      {
        done: (s) => s.value("tenant_api_executions_finished_total", { state: "AUTOMATION_EXECUTION_STATE_DONE" }),
        failed: (s) => s.value("tenant_api_executions_finished_total", { state: "AUTOMATION_EXECUTION_STATE_ERROR" }),
        lagCount: (s) => s.value("tenant_api_execution_lag_seconds_count"),
        lagUnder1ms: (s) => s.value("tenant_api_execution_lag_seconds_bucket", { le: "0.001" }),
      },
    );
    // The test's clock stands still: every lag is 0.
    expect(d).toEqual({ done: 3, failed: 1, lagCount: 4, lagUnder1ms: 4 });
    const s = await scrape(metricsUrl);
    expect(s.value("tenant_api_executions_running")).toBe(0);
    expect(s.value("tenant_api_executions_waiting")).toBe(0);
    expect(s.value("tenant_api_execution_retries_total")).toBe(0);
    expect(s.value("tenant_api_execution_lease_expiries_total")).toBe(0);
  });

  it("counts spend decisions by outcome and decline cause", async () => {
    const { userId } = await ts.userClient(["ROLE_USER"]);
    const app = await appWithLimit(funds(ts.admin), userId, "5");
    const spend = spends(ts.admin);
    const outcome = (outcome: string, cause: string) => (s: Scrape) => s.value("tenant_api_spend_decisions_total", { outcome, cause });
    const d = await moved(
      async () => {
        for (const units of ["2", "2", "2"]) unwrap(await spend.authorize({ userId, appId: app, amount: money(units) }));
      },
      { approved: outcome("approved", "SPEND_DECLINE_CAUSE_UNSPECIFIED"), overLimit: outcome("declined", "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED") },
    );
    expect(d).toEqual({ approved: 2, overLimit: 1 });
  });

  it("shows the readiness reasons, the worker's stall, the database's series, the build and Node's own", async () => {
    const s = await scrape(metricsUrl);
    for (const reason of ["database-unreachable", "workers-stuck", "stopping"]) expect(s.value("tenant_api_unready", { reason }), reason).toBe(0);
    expect(s.value("tenant_api_execution_worker_stalled_seconds")).toBe(0);
    // A ping every second, answered in milliseconds.
    expect(s.value("tenant_api_db_unanswered_seconds")).toBeLessThan(2);
    expect(s.samples("tenant_api_build_info")).toEqual([{ labels: { version: "0.1.0-alpha", commit: expect.stringMatching(/^([0-9a-f]{40}|unknown)$/) }, value: 1 }]);
    for (const name of ["nodejs_eventloop_lag_p99_seconds", "nodejs_heap_size_used_bytes", "process_cpu_seconds_total"]) expect(s.samples(name).length, name).toBeGreaterThan(0);
    expect(s.text).toContain("# TYPE nodejs_gc_duration_seconds histogram");
    if (testDialect() === "postgres") {
      expect(s.value("tenant_api_db_pool_max")).toBe(10);
      expect(s.value("tenant_api_db_pool_open")).toBeGreaterThan(0);
      expect(s.value("tenant_api_db_pool_waiting")).toBe(0);
      expect(s.text).toContain("# TYPE tenant_api_db_statement_timeouts_total counter");
      expect(s.text).not.toContain("tenant_api_sqlite_write_lock_wait_seconds");
    } else {
      // Every write so far began with BEGIN IMMEDIATE, none waiting for another process.
      expect(s.value("tenant_api_sqlite_write_lock_wait_seconds_count")).toBeGreaterThan(0);
      expect(s.text).not.toContain("tenant_api_db_pool");
    }
  });

  it("answers OpenMetrics when the Accept header asks for it, and the Prometheus text after it unchanged", async () => {
    const open = await scrape(metricsUrl, { Accept: "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3" });
    expect(open.contentType).toBe("application/openmetrics-text; version=1.0.0; charset=utf-8");
    expect(open.text).toContain("# TYPE tenant_api_http_requests counter");
    expect(open.samples("tenant_api_http_requests_total").length).toBeGreaterThan(0);
    expect(open.text.endsWith("# EOF\n")).toBe(true);
    const plain = await scrape(metricsUrl);
    expect(plain.text).toContain("# TYPE tenant_api_http_requests_total counter");
    expect(plain.samples("tenant_api_http_requests_total").length).toBeGreaterThan(0);
  });
});

describe("what the database failed, waited for and resumed", () => {
  it("counts an execution whose run did not finish, resumed after its lease lapsed", async () => {
    const hook = await createHooked(ts, { steps: [evaluateStep("compute", { n: "ctx.trigger.n" })] });
    const accepted = expectAccepted(await sendHmac(ts, hook.url, hook.secret, '{"n":1}'));
    await ts.server.worker.idle();
    const storage = await openStorage(loadConfig({ DATABASE_URL: ts.databaseUrl }).database, { migrate: false });
    const d = await moved(
      async () => {
        // As a run cut by its instance's death leaves it: running, its lease lapsed, one run begun.
        await storage.db
          .updateTable("automation_executions")
          .set({ state: "AUTOMATION_EXECUTION_STATE_RUNNING", lease_until: "2026-01-01T00:00:00.000Z", completed_at: null, attempts: 1 })
          .where("id", "=", accepted.automationExecutionId!)
          .execute();
        ts.server.worker.notify();
        await ts.server.worker.idle();
      },
      {
        retries: (s) => s.value("tenant_api_execution_retries_total"),
        done: (s) => s.value("tenant_api_executions_finished_total", { state: "AUTOMATION_EXECUTION_STATE_DONE" }),
      },
    ).finally(() => storage.close());
    expect(d).toEqual({ retries: 1, done: 1 });
  });

  it.runIf(testDialect() === "postgres")("PostgreSQL: the time since the database last answered climbs through an outage from its start, and falls back once it answers", async () => {
    const proxy = new TcpProxy();
    const cut = await startTestServer({ METRICS_PORT: String(await freePort()), RATE_LIMIT: "off" }, undefined, { reachDatabase: (url) => proxy.start(url) });
    const unanswered = async () => (await scrape(cut.server.metricsUrl!)).value("tenant_api_db_unanswered_seconds")!;
    try {
      expect(await unanswered()).toBeLessThan(2);
      await proxy.cut();
      const cutAt = performance.now();
      await until(async () => (await unanswered()) >= 3, "three seconds without an answer");
      // From the last answer, before the cut: at least the outage's length so far.
      const before = performance.now();
      expect((await unanswered()) * 1000).toBeGreaterThanOrEqual(before - cutAt - 50);
      await proxy.restore();
      await until(async () => (await unanswered()) < 2, "an answer again");
    } finally {
      await proxy.restore();
      await cut.stop();
      await proxy.close();
    }
  });

  it.runIf(testDialect() === "postgres")("PostgreSQL: counts a statement past statement_timeout as a timeout and a failed transaction", async () => {
    const slow = await startTestServer({ METRICS_PORT: String(await freePort()), DATABASE_STATEMENT_TIMEOUT_MS: "300", RATE_LIMIT: "off" });
    const locker = new pg.Client({ connectionString: slow.databaseUrl });
    await locker.connect();
    try {
      const { userId } = await slow.userClient(["ROLE_USER"]);
      const appId = newAppId("slow");
      unwrap(await funds(slow.admin).setLimit(userId, appId, { limit: amount("100") }));
      const d = await moved(
        async () => {
          await locker.query("begin");
          await locker.query("select spend_lock_subject_app($1, $2)", [userId, appId]);
          expect((await spends(slow.admin).authorize({ userId, appId, amount: money("1") })).response.status).toBe(503);
          await locker.query("rollback");
        },
        {
          statementTimeouts: (s) => s.value("tenant_api_db_statement_timeouts_total", { timeout: "statement" }),
          failed: (s) => s.value("tenant_api_db_transactions_failed_total", { cause: "sqlstate 57014" }),
          unavailable: (s) => s.value("tenant_api_http_refusals_total", { reason: "UNAVAILABLE" }),
        },
        slow.server.metricsUrl,
      );
      expect(d).toEqual({ statementTimeouts: 1, failed: 1, unavailable: 1 });
    } finally {
      await locker.end().catch(() => undefined);
      await slow.stop();
    }
  });

  it.runIf(testDialect() === "postgres")("PostgreSQL: counts a run that stopped because its lease passed to another run", async () => {
    const held = await startTestServer({ METRICS_PORT: String(await freePort()), DATABASE_STATEMENT_TIMEOUT_MS: "0", DATABASE_QUERY_TIMEOUT_MS: "0", RATE_LIMIT: "off" });
    const locker = new pg.Client({ connectionString: held.databaseUrl });
    await locker.connect();
    try {
      const { userId } = await held.userClient(["ROLE_USER"]);
      const appId = newAppId("lease");
      const hook = await createHooked(held, { steps: [{ stepName: "suspend", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId" } }] });
      const d = await moved(
        async () => {
          await locker.query("begin");
          await locker.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [`subject_app_limits:${userId}:${appId}`]);
          const event = expectAccepted(await sendHmac(held, hook.url, hook.secret, JSON.stringify({ userId, appId })));
          await until(async () => (await locker.query(LOCK_WAITERS)).rowCount === 1, "the step to wait on the lock");
          // Meanwhile the run's lease lapsed and another run claimed the execution.
          await locker.query("update automation_executions set lease_until = $1 where id = $2", ["2099-01-01T00:00:00.000Z", event.automationExecutionId]);
          await locker.query("commit");
          await held.server.worker.idle();
        },
        {
          leaseExpiries: (s) => s.value("tenant_api_execution_lease_expiries_total"),
          finished: (s) => (s.value("tenant_api_executions_finished_total", { state: "AUTOMATION_EXECUTION_STATE_DONE" }) ?? 0) + (s.value("tenant_api_executions_finished_total", { state: "AUTOMATION_EXECUTION_STATE_ERROR" }) ?? 0),
        },
        held.server.metricsUrl,
      );
      expect(d).toEqual({ leaseExpiries: 1, finished: 0 });
    } finally {
      await locker.end().catch(() => undefined);
      await held.stop();
    }
  });

  it.runIf(testDialect() === "sqlite")("SQLite: counts a write's wait for another process's write lock, and the write failed past the busy timeout", async () => {
    // Its audit inbox is not moved while the test holds the lock: the one write that waits is the request's.
    const busy = await startTestServer({ METRICS_PORT: String(await freePort()), SQLITE_BUSY_TIMEOUT_MS: "200", RATE_LIMIT: "off" }, undefined, { auditInboxMoveMs: 3_600_000 });
    const other = new SQLite(busy.databaseUrl.replace(/^sqlite:/, ""));
    try {
      const { userId } = await busy.userClient(["ROLE_USER"]);
      const appId = newAppId("busy");
      const d = await moved(
        async () => {
          other.exec("begin immediate");
          expect((await funds(busy.admin).setLimit(userId, appId, { limit: amount("100") })).response.status).toBe(503);
          other.exec("rollback");
        },
        {
          // The wait, about 200 ms: past the 100 ms bucket.
          waitedOver100ms: (s) => (s.value("tenant_api_sqlite_write_lock_wait_seconds_count") ?? 0) - (s.value("tenant_api_sqlite_write_lock_wait_seconds_bucket", { le: "0.1" }) ?? 0),
          failed: (s) => s.value("tenant_api_db_transactions_failed_total", { cause: "SQLITE_BUSY" }),
          unavailable: (s) => s.value("tenant_api_http_refusals_total", { reason: "UNAVAILABLE" }),
        },
        busy.server.metricsUrl,
      );
      expect(d).toEqual({ waitedOver100ms: 1, failed: 1, unavailable: 1 });
    } finally {
      if (other.inTransaction) other.exec("rollback");
      other.close();
      await busy.stop();
    }
  });
  it.runIf(testDialect() === "sqlite")("SQLite: counts the audit events moved from the inbox; the caught-up time stops while another process holds the write lock, and advances once it is released", async () => {
    const busy = await startTestServer({ METRICS_PORT: String(await freePort()), SQLITE_BUSY_TIMEOUT_MS: "100", RATE_LIMIT: "off" }, undefined, { auditInboxMoveMs: 200 });
    const other = new SQLite(busy.databaseUrl.replace(/^sqlite:/, ""));
    const url = busy.server.metricsUrl!;
    const caughtUpMs = async () => ((await scrape(url)).value("tenant_api_sqlite_audit_inbox_caught_up_timestamp_seconds") ?? 0) * 1000;
    const movedTotal = async () => (await scrape(url)).value("tenant_api_sqlite_audit_inbox_moved_total") ?? 0;
    try {
      const { userId } = await busy.userClient(["ROLE_USER"]);
      await until(async () => (await caughtUpMs()) === busy.clock.now(), "the first move");
      const movedBefore = await movedTotal();

      // An event in the inbox, and the write lock taken before (or just after) the next move.
      unwrap(await funds(busy.admin).setLimit(userId, newAppId("inbox"), { limit: amount("100") }));
      other.exec("begin immediate");
      const locked = busy.clock.now();
      busy.clock.advance(60_000);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await caughtUpMs()).toBeLessThanOrEqual(locked);

      other.exec("rollback");
      await until(async () => (await caughtUpMs()) === locked + 60_000, "a move once the lock is released");
      expect((await movedTotal()) - movedBefore).toBeGreaterThanOrEqual(1);
    } finally {
      if (other.inTransaction) other.exec("rollback");
      other.close();
      await busy.stop();
    }
  });

  it.runIf(testDialect() === "postgres")("PostgreSQL: has no audit inbox series (events are written to the trail directly)", async () => {
    expect((await scrape(metricsUrl)).text).not.toContain("tenant_api_sqlite_audit_inbox");
  });
});

describe("without METRICS_PORT", () => {
  it("has no metrics listener and no /metrics on the API's port", async () => {
    const plain = await startTestServer();
    try {
      expect(plain.server.metricsUrl).toBeUndefined();
      unwrap(await plain.admin.GET("/api/v1/funds/policy"));
      expect((await fetch(`${plain.url}/metrics`)).status).toBe(404);
    } finally {
      await plain.stop();
    }
  });
});

describe("shutdown", () => {
  it("closes the metrics listener with a scraper's connection still kept open", async () => {
    const s = await startTestServer({ METRICS_PORT: String(await freePort()) });
    const kept = await new Promise<import("node:net").Socket>((resolve, reject) => {
      const req = request(s.server.metricsUrl!, { headers: { Connection: "keep-alive" } }, (res) => {
        res.resume();
        res.on("end", () => resolve(req.socket!));
      });
      req.on("error", reject);
      req.end();
    });
    const closed = new Promise((resolve) => kept.once("close", resolve));
    await s.stop();
    await closed;
    await expect(fetch(s.server.metricsUrl!)).rejects.toThrow();
  });
});
