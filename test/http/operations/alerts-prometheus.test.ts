// The alert rules operators copy (examples/prometheus/alerts.yml), as written (their `for`
// durations included), fired by a real Prometheus (Debian's package, run by the test; skipped,
// saying so, where it is missing) that scrapes three server processes and evaluates every second,
// each instance made to fail for real:
// - one is stopped: TenantApiInstanceDown, a minute later;
// - one reaches its database through the test's TCP proxy, which cuts it off for 30 s (connections
//   reset, new ones refused): TenantApiDatabaseUnreachable fires within the outage; the requests
//   it answers 503 meanwhile fire TenantApiErrorRatio;
// - on one, requests wait on a lock the test holds for 1.5 s at a time, among quicker ones, all
//   answered 200: TenantApiLatencyHigh, and nothing else fires for it (its database answers, none
//   of its answers is 5xx).
// The rules run together in one Prometheus: the test takes a minute and a half. PostgreSQL only:
// the database's outage is a network's (on SQLite the database is a file the process holds).
// TenantApiConnectionsRefused and the rules of executions, the audit inbox and the pool are checked
// by `promtool test rules` (test/metrics/alert-rules.test.ts) only: their conditions (a process out
// of descriptors, a backlog for 5 to 10 minutes) would each take a run of its own or many minutes.
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { freePort } from "../../support/process.js";
import { PROMETHEUS, prometheusFound, startPrometheus, type Alert, type Prometheus } from "../../support/prometheus.js";
import { TcpProxy } from "../../support/tcp-proxy.js";
import { amount, funds, money, newAppId } from "../limits/helpers.js";
import { spends } from "../spends/helpers.js";

const RULES = fileURLToPath(new URL("../../../examples/prometheus/alerts.yml", import.meta.url));
const ADMIN = { clientId: "alerts-admin", clientSecret: "alerts-admin-secret-0123456789" };
const OUTAGE_MS = 30_000;
const LOCK_HELD_MS = 1_500;

const postgres = testDialect() === "postgres";
if (postgres && !prometheusFound) console.warn(`SKIPPED: the alert rules fired against a real Prometheus: no Prometheus binary at ${PROMETHEUS} (apt-get install prometheus, or set PROMETHEUS_BIN)`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Role {
  cluster: Instances;
  client: ApiClient;
  /** The `instance` label Prometheus gives it: its metrics listener's host:port. */
  instance: string;
}

async function startRole(options: { reachDatabase?: (url: string) => Promise<string> } = {}): Promise<Role> {
  const metricsPort = await freePort();
  const cluster = await startInstances(1, ADMIN, "http://tenant.example.test", { METRICS_PORT: String(metricsPort), RATE_LIMIT: "off" }, options);
  return { cluster, client: cluster.clients[0]!, instance: `127.0.0.1:${metricsPort}` };
}

describe.runIf(postgres && prometheusFound)("the alert rules, fired by a real Prometheus over server processes", () => {
  const proxy = new TcpProxy();
  let down: Role;
  let outage: Role;
  let slow: Role;
  let prometheus: Prometheus;

  beforeAll(async () => {
    [down, outage, slow] = await Promise.all([startRole(), startRole({ reachDatabase: (url) => proxy.start(url) }), startRole()]);
    prometheus = await startPrometheus([down.instance, outage.instance, slow.instance], [RULES]);
  }, 180_000);

  afterAll(async () => {
    await prometheus?.stop();
    await proxy.restore();
    for (const role of [down, outage, slow]) await role?.cluster.stop();
    await proxy.close();
  }, 60_000);

  const alertsOf = async (instance: string): Promise<Alert[]> => (await prometheus.alerts()).filter((a) => a.labels.instance === instance);
  const firing = async (instance: string, alertname: string) => (await alertsOf(instance)).some((a) => a.labels.alertname === alertname && a.state === "firing");

  it("an instance stopped, a database cut off for 30 s, requests answered 503, requests waiting on a lock: each fires its alert", { timeout: 240_000 }, async () => {
    await prometheus.until(async () => (await prometheus.query('up{job="tenant-api"} == 1')).length === 3, "the first scrape of each instance");

    // The slow instance's requests: reads at once, and authorizations that wait on the subject and
    // app's spend lock, which the test holds for LOCK_HELD_MS at a time (statement_timeout is 15 s).
    const userId = unwrap(await slow.client.POST("/api/v1/users", { body: { displayName: "Waiter", email: `waiter-${Date.now()}@example.com`, roles: ["ROLE_USER"] } })).user.id!;
    const appId = newAppId("alerts");
    unwrap(await funds(slow.client).setLimit(userId, appId, { limit: amount("1000000") }));
    const locker = new pg.Client({ connectionString: slow.cluster.database.url });
    await locker.connect();

    let stopped = false;
    const statuses = { outage: new Map<number, number>(), slow: new Map<number, number>() };
    const count = (of: Map<number, number>, status: number) => of.set(status, (of.get(status) ?? 0) + 1);
    const reads = async (role: Role, of: Map<number, number>) => {
      while (!stopped) {
        count(of, (await role.client.GET("/api/v1/funds/policy")).response.status);
        await sleep(100);
      }
    };
    const waits = async () => {
      while (!stopped) {
        await locker.query("begin");
        await locker.query("select spend_lock_subject_app($1, $2)", [userId, appId]);
        const waiting = [1, 2].map(() => spends(slow.client).authorize({ userId, appId, amount: money("1") }));
        await sleep(LOCK_HELD_MS);
        await locker.query("rollback");
        for (const answer of await Promise.all(waiting)) count(statuses.slow, answer.response.status);
      }
    };
    // Its token before the outage: fetched during it, it would be refused too.
    unwrap(await outage.client.GET("/api/v1/funds/policy"));
    // Settled, not rejected, until awaited: a loop's failure fails the test at the end.
    const traffic = Promise.allSettled([reads(outage, statuses.outage), reads(slow, statuses.slow), waits()]);

    try {
      await down.cluster.instances[0]!.stop();
      await proxy.cut();
      const cutAt = performance.now();
      // Within the outage, whatever the phase of the pings, scrapes and evaluations.
      await prometheus.until(() => firing(outage.instance, "TenantApiDatabaseUnreachable"), "TenantApiDatabaseUnreachable to fire", OUTAGE_MS);
      const firedAfterMs = performance.now() - cutAt;
      expect(firedAfterMs).toBeLessThan(OUTAGE_MS);
      await sleep(OUTAGE_MS - firedAfterMs);
      await proxy.restore();

      await prometheus.until(
        async () => (await firing(down.instance, "TenantApiInstanceDown")) && (await firing(outage.instance, "TenantApiErrorRatio")) && (await firing(slow.instance, "TenantApiLatencyHigh")),
        "TenantApiInstanceDown, TenantApiErrorRatio and TenantApiLatencyHigh to fire",
        150_000,
      );
      // Nothing else for the slow instance: its database answered, and none of its answers was 5xx.
      expect((await alertsOf(slow.instance)).map((a) => [a.labels.alertname, a.state])).toEqual([["TenantApiLatencyHigh", "firing"]]);
      // Once the database answers, its alert ends.
      await prometheus.until(async () => !(await alertsOf(outage.instance)).some((a) => a.labels.alertname === "TenantApiDatabaseUnreachable"), "TenantApiDatabaseUnreachable to resolve", 10_000);
    } finally {
      stopped = true;
      const failed = (await traffic).filter((r) => r.status === "rejected");
      await locker.end();
      expect(failed).toEqual([]);
    }
    expect([...statuses.slow.keys()]).toEqual([200]);
    expect(statuses.outage.get(503)).toBeGreaterThan(100);
  });
});
