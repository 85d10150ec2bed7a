// tenant_api_execution_lag_seconds when time passes between an event's acceptance and its run: every
// other test's clock stands still (a lag of 0 whatever the subtraction). Two servers in turn on one
// database (and one secrets key file): the first accepts the event with its worker stopped, as an
// instance behind a backlog leaves it, at 2.5 s before the harness's start time; the next starts at
// that time and its worker runs the event at once. The lag it observes is 2.5 s.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { createTestDatabase, type TestDatabase } from "../../support/database.js";
import { scrape } from "../../support/metrics.js";
import { freePort } from "../../support/process.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { automationsApi, createHooked, evaluateStep, expectAccepted, sendHmac } from "../webhooks/helpers.js";

/** The harness's clock at a server's start (test/support/server.ts). */
const START = Date.parse("2026-11-20T09:00:00Z");
const LAG_MS = 2_500;

const dir = mkdtempSync(join(tmpdir(), "tenant-metrics-lag-"));
let database: TestDatabase;
let env: Record<string, string>;
const servers: TestServer[] = [];

beforeAll(async () => {
  database = await createTestDatabase(dir);
  env = { DATABASE_URL: database.url, SECRETS_KEY_FILE: join(dir, "secrets.key"), RATE_LIMIT: "off" };
});
afterAll(async () => {
  for (const ts of servers.reverse()) await ts.stop();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function start(extra: Record<string, string> = {}): Promise<TestServer> {
  const ts = await startTestServer({ ...env, ...extra });
  servers.push(ts);
  return ts;
}

it("observes the time from the event's acceptance to the end of its run: 2.5 s, in the buckets above 2.5 s only", async () => {
  const intake = await start();
  const hook = await createHooked(intake, { steps: [evaluateStep("compute", { n: "ctx.trigger.n" })] });
  await intake.server.worker.stop();
  intake.clock.set(START - LAG_MS);
  const accepted = expectAccepted(await sendHmac(intake, hook.url, hook.secret, '{"n":2}'));
  const id = accepted.automationExecutionId!;
  const waiting = unwrap(await automationsApi(intake.admin).execution(id)).automationExecution;
  expect(waiting.state).toBe("AUTOMATION_EXECUTION_STATE_PENDING");
  expect(waiting.createdAt).toBe(new Date(START - LAG_MS).toISOString());

  // Its worker claims the pending execution as it starts, 2.5 s after the acceptance by the clocks.
  const runner = await start({ METRICS_PORT: String(await freePort()) });
  expect(runner.clock.now()).toBe(START);
  await runner.server.worker.idle();
  const done = unwrap(await automationsApi(runner.admin).execution(id)).automationExecution;
  expect(done.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
  expect(done.completedAt).toBe(new Date(START).toISOString());

  const s = await scrape(runner.server.metricsUrl!);
  const bucket = (le: string) => s.value("tenant_api_execution_lag_seconds_bucket", { le });
  expect(s.value("tenant_api_executions_finished_total", { state: "AUTOMATION_EXECUTION_STATE_DONE" })).toBe(1);
  expect(s.value("tenant_api_execution_lag_seconds_count")).toBe(1);
  expect(s.value("tenant_api_execution_lag_seconds_sum")).toBeCloseTo(LAG_MS / 1000, 6);
  expect({ "0.001": bucket("0.001"), "1": bucket("1"), "2.5": bucket("2.5"), "5": bucket("5"), "+Inf": bucket("+Inf") }).toEqual({ "0.001": 0, "1": 0, "2.5": 1, "5": 1, "+Inf": 1 });
  expect(s.value("tenant_api_executions_waiting")).toBe(0);
});
