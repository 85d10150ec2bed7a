// A lock on one table degrades only what needs that table (PostgreSQL): an administrator's
// `LOCK TABLE automation_executions` held past every timeout of the server, while webhook
// deliveries arrive and the worker claims. The statements that need the table wait for it at most
// DATABASE_LOCK_TIMEOUT_MS at a time (their requests answered 503, sent again by the sender), so
// the pool is not filled with waiters: reads of limits and of the fund policy answer 200 throughout,
// /readyz answers within its bound from a connection of its own, and once the lock is gone every
// event the intake recorded runs once.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Acceptance } from "../../support/acceptance.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../../support/database.js";
import { withDatabase } from "../../support/old-database.js";
import type { Served } from "../../support/process.js";
import { serveRelease, TEST_SECRETS_KEY } from "../../support/release.js";
import { SteadyLoad } from "../../support/steady-load.js";

const dir = mkdtempSync(join(tmpdir(), "tenant-locked-table-"));
const ADMIN = { clientId: "locked-table-admin", clientSecret: "locked-table-admin-secret-0123" };
const APP = "app-locked-table";
const HELD_MS = 12_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let database: TestDatabase;
let server: Served;
beforeAll(async () => {
  if (testDialect() !== "postgres") return;
  database = await createTestDatabase(dir);
  server = await serveRelease({
    DATABASE_URL: database.url,
    SECRETS_KEY: TEST_SECRETS_KEY,
    BOOTSTRAP_CLIENT_ID: ADMIN.clientId,
    BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret,
    RATE_LIMIT: "off",
    DATABASE_POOL_SIZE: "6",
    DATABASE_POOL_TIMEOUT_MS: "3000",
    DATABASE_STATEMENT_TIMEOUT_MS: "5000",
    DATABASE_QUERY_TIMEOUT_MS: "8000",
    DATABASE_LOCK_TIMEOUT_MS: "1000",
  });
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** `GET path` every `everyMs` until `until` resolves: each answer's status and how long it took. */
async function poll(url: string, headers: Record<string, string>, everyMs: number, until: Promise<unknown>): Promise<{ status: number; ms: number }[]> {
  const answers: { status: number; ms: number }[] = [];
  let done = false;
  void until.then(() => (done = true));
  while (!done) {
    const started = performance.now();
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(15_000) }).catch(() => undefined);
    answers.push({ status: response?.status ?? 0, ms: Math.round(performance.now() - started) });
    await response?.arrayBuffer();
    await sleep(everyMs);
  }
  return answers;
}

describe.skipIf(testDialect() !== "postgres")("a LOCK TABLE on automation_executions held past the timeouts (PostgreSQL)", () => {
  it("limits and the policy answer throughout, /readyz answers in time, and every recorded event runs once after", { timeout: 180_000 }, async () => {
    const api = new Acceptance(server.url, ADMIN);
    const subject = (await api.subject()).body.user.id as string;
    expect((await api.limit(subject, APP, 100)).status).toBe(200);
    const hook = await api.hook();
    const token = (await api.token()).body.access_token as string;
    const auth = { Authorization: `Bearer ${token}` };

    const load = new SteadyLoad({ url: server.url, admin: ADMIN, subjects: [subject], appId: APP, hook, spendsPerSecond: 2, deliveriesPerSecond: 10, units: 1 });
    const held = withDatabase(database.url, (db) =>
      db.transaction().execute(async (trx) => {
        await sql`lock table automation_executions in access exclusive mode`.execute(trx);
        load.start();
        await sleep(HELD_MS);
      }),
    );
    const [limits, policy, ready] = await Promise.all([
      poll(`${server.url}/api/v1/funds/subject-app-limits/${subject}/${APP}`, auth, 100, held),
      poll(`${server.url}/api/v1/funds/policy`, auth, 100, held),
      poll(`${server.url}/readyz`, {}, 500, held),
    ]);
    await load.stop();

    expect(limits.filter((a) => a.status !== 200), "limit reads not answered 200 while the executions were locked").toEqual([]);
    expect(policy.filter((a) => a.status !== 200), "policy reads not answered 200 while the executions were locked").toEqual([]);
    expect(ready.filter((a) => a.status !== 200 || a.ms > 2_500), "/readyz slow or not ready (the database answers)").toEqual([]);
    expect(load.faults).toEqual([]);
    expect(load.statuses.get(503) ?? 0, "deliveries met the lock").toBeGreaterThan(0);

    const deadline = Date.now() + 60_000;
    let runs: { event_id: string | null; state: string }[] = [];
    while (Date.now() < deadline) {
      runs = await withDatabase(database.url, (db) => db.selectFrom("automation_executions").select(["event_id", "state"]).where("automation_id", "=", hook.automationId).execute());
      if (runs.length >= load.accepted.size && runs.every((r) => r.state === "AUTOMATION_EXECUTION_STATE_DONE")) break;
      await sleep(250);
    }
    expect(runs.map((r) => r.event_id).sort()).toEqual([...load.accepted].sort());
    expect(runs.every((r) => r.state === "AUTOMATION_EXECUTION_STATE_DONE")).toBe(true);
  });
});
