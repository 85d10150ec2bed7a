// The documented upgrade under load, on PostgreSQL (docs/operating.md "Upgrading"): the previous
// release (the last of src/storage/releases.ts, its sources taken from git) serves spends and
// webhook deliveries at a steady rate while this release's `npm run migrate` migrates its database,
// several rounds. Every round: the migration succeeds, no request is answered 500 (a request that
// meets the migration's locks waits, or is answered 503 and sent again), the spends are exact (no
// subject approved past its limit; the usage this release reads is what the approvals add up to),
// and every webhook event the intake recorded is run once. On SQLite the upgrade stops the previous
// release first (the file has one writer), so there is no such load to migrate under.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RELEASES } from "../../../src/storage/releases.js";
import { Acceptance } from "../../support/acceptance.js";
import { createTestDatabase, testDialect } from "../../support/database.js";
import { withDatabase } from "../../support/old-database.js";
import { checkOutRelease, runMigrate, serveRelease, TEST_SECRETS_KEY } from "../../support/release.js";
import { SteadyLoad } from "../../support/steady-load.js";

const previous = RELEASES.at(-1)!;
const dir = mkdtempSync(join(tmpdir(), "tenant-upgrade-load-"));
const release = join(dir, "previous-release");
const ADMIN = { clientId: "upgrade-load-admin", clientSecret: "upgrade-load-admin-secret-012" };
const APP = "app-upgrade-load";
const LIMIT = 40;
const ROUNDS = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(() => {
  if (testDialect() === "postgres") checkOutRelease(previous.commit, release);
}, 600_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Waits until every execution of `automationId` has ended; answers how many executions each event id has. */
async function executionsByEvent(url: string, automationId: string): Promise<Map<string, number>> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const rows = await withDatabase(url, (db) => db.selectFrom("automation_executions").select(["event_id", "state"]).where("automation_id", "=", automationId).execute());
    const unfinished = rows.filter((r) => r.state !== "AUTOMATION_EXECUTION_STATE_DONE");
    if (unfinished.length === 0 || Date.now() > deadline) {
      expect(unfinished, "every execution has run to its end").toEqual([]);
      const counts = new Map<string, number>();
      for (const r of rows) counts.set(r.event_id as string, (counts.get(r.event_id as string) ?? 0) + 1);
      return counts;
    }
    await sleep(250);
  }
}

describe.skipIf(testDialect() !== "postgres")(`an upgrade from the previous release (${previous.commit.slice(0, 7)}) under load (PostgreSQL)`, () => {
  for (let round = 1; round <= ROUNDS; round++) {
    it(`round ${round}: npm run migrate succeeds while the previous release serves spends and webhooks; no 500, spends exact, every event run once`, { timeout: 240_000 }, async () => {
      const database = await createTestDatabase(dir);
      const env = { DATABASE_URL: database.url, SECRETS_KEY: TEST_SECRETS_KEY, BOOTSTRAP_CLIENT_ID: ADMIN.clientId, BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret, RATE_LIMIT: "off" };
      const old = await serveRelease(env, release);
      let current: Awaited<ReturnType<typeof serveRelease>> | undefined;
      try {
        const api = new Acceptance(old.url, ADMIN);
        const subjects: string[] = [];
        for (let i = 0; i < 4; i++) {
          const subject = (await api.subject()).body.user.id as string;
          expect((await api.limit(subject, APP, LIMIT)).status).toBe(200);
          subjects.push(subject);
        }
        const hook = await api.hook();
        const load = new SteadyLoad({ url: old.url, admin: ADMIN, subjects, appId: APP, hook, spendsPerSecond: 30, deliveriesPerSecond: 5, units: 1 });
        load.start();
        await sleep(1_500);
        const migrated = await runMigrate({ DATABASE_URL: database.url });
        await sleep(1_500);
        await load.stop();

        expect(migrated.code, migrated.out).toBe(0);
        expect(migrated.stdout).toContain("migrations applied");
        const faultLines = old.output().split("\n").filter((l) => l.includes('"level":50'));
        expect({ faults: load.faults, log: faultLines }, "answers 5xx other than 503, and the errors the server logged").toEqual({ faults: [], log: [] });
        expect(load.statuses.get(500) ?? 0).toBe(0);

        // This release, on the migrated database, reads what the approvals add up to.
        current = await serveRelease({ ...env, MIGRATE_AT_START: "0" });
        const now = new Acceptance(current.url, ADMIN);
        let approvedInAll = 0;
        for (const subject of subjects) {
          const approved = load.approved.get(subject) ?? 0;
          approvedInAll += approved;
          expect(approved, "no subject is approved past its limit").toBeLessThanOrEqual(LIMIT);
          const spent = (await now.effective(subject, APP)).body.effective.usage.spent.units;
          expect(spent).toBe(String(approved));
        }
        expect(approvedInAll + load.declined, "spends were decided throughout").toBeGreaterThan(60);

        const runs = await executionsByEvent(database.url, hook.automationId);
        expect(load.accepted.size, "deliveries were accepted throughout").toBeGreaterThan(10);
        expect([...runs.keys()].sort()).toEqual([...load.accepted].sort());
        expect([...runs.values()].every((n) => n === 1), "every event run once").toBe(true);
      } finally {
        await current?.stop();
        await old.stop();
        await database.drop();
      }
    });
  }
});
