// A real Prometheus (Debian's `prometheus` package; .ci/run installs it) scrapes a running server
// every second, and PromQL over its HTTP API sees the request rate per operation and the execution
// lag histogram move under a short load: the metrics are what Prometheus reads, in the format it
// asks for (OpenMetrics). Prometheus runs from the test with a configuration and data folder of its
// own on a free port, never as a service. Where its binary is missing the test is skipped, saying so.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { freePort } from "../../support/process.js";
import { PROMETHEUS, prometheusFound, startPrometheus, type Prometheus } from "../../support/prometheus.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { createHooked, evaluateStep, expectAccepted, sendHmac } from "../webhooks/helpers.js";

if (!prometheusFound) console.warn(`SKIPPED: the real-Prometheus metrics test: no Prometheus binary at ${PROMETHEUS} (apt-get install prometheus, or set PROMETHEUS_BIN)`);

const POLICY_GET = "svc.api.funds.v1.FundPolicyService.Get";
const RECEIVE = "svc.api.webhooks.v1.IncomingWebhookService.Receive";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!prometheusFound)("a real Prometheus scraping the server", () => {
  let ts: TestServer;
  let prometheus: Prometheus;

  beforeAll(async () => {
    ts = await startTestServer({ METRICS_PORT: String(await freePort()), RATE_LIMIT: "off" });
    prometheus = await startPrometheus([new URL(ts.server.metricsUrl!).host]);
  }, 60_000);

  afterAll(async () => {
    await prometheus?.stop();
    await ts?.stop();
  });

  const query = (promql: string) => prometheus.query(promql);
  const until = (ok: () => Promise<boolean>, what: string, timeoutMs?: number) => prometheus.until(ok, what, timeoutMs);

  it("sees the request rate per operation and the execution lag histogram move under a short load", { timeout: 90_000 }, async () => {
    // Scraped, and read as OpenMetrics (what Prometheus asks for first).
    await until(async () => (await query('up{job="tenant-api"}')).some((s) => s.value[1] === "1"), "the first scrape");
    const lagCount = async () => Number((await query("sum(tenant_api_execution_lag_seconds_count)"))[0]?.value[1] ?? 0);
    const lagBefore = await lagCount();

    const hook = await createHooked(ts, { steps: [evaluateStep("echo", { n: "ctx.trigger.n" })] });
    const events = 30;
    // A few seconds of load, so that several scrapes see the counters climb.
    for (let i = 0; i < events; i++) {
      unwrap(await ts.admin.GET("/api/v1/funds/policy"));
      expectAccepted(await sendHmac(ts, hook.url, hook.secret, `{"n":${i}}`));
      await sleep(100);
    }
    await ts.server.worker.idle();

    const rateOf = async (operation: string) => {
      const samples = await query(`sum by (operation) (rate(tenant_api_http_requests_total{operation="${operation}"}[10s]))`);
      return Number(samples[0]?.value[1] ?? 0);
    };
    await until(async () => (await rateOf(POLICY_GET)) > 0 && (await rateOf(RECEIVE)) > 0, "a request rate per operation");
    await until(async () => (await lagCount()) >= lagBefore + events, `the execution lag histogram to count ${events} more executions`);
    const perOperation = await query("sum by (operation, status_class) (increase(tenant_api_http_requests_total[1m]))");
    expect(perOperation.map((s) => s.metric.operation)).toEqual(expect.arrayContaining([POLICY_GET, RECEIVE]));
    const quantile = await query("histogram_quantile(0.99, sum by (le) (rate(tenant_api_execution_lag_seconds_bucket[1m])))");
    expect(Number.isFinite(Number(quantile[0]?.value[1]))).toBe(true);
    // Each reason of /readyz is a series, 0 while it does not hold.
    const unready = await query("tenant_api_unready");
    expect(unready.map((s) => [s.metric.reason, s.value[1]]).sort()).toEqual([["database-unreachable", "0"], ["stopping", "0"], ["workers-stuck", "0"]]);
  });
});
