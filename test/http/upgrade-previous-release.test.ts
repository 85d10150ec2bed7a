// A rolling upgrade from the previous release (the last of src/storage/releases.ts, its sources
// taken from git): its server serves a database, this release's `npm run migrate` migrates that
// database under it, and the previous release's server goes on answering the acceptance flows (a
// token, a limit, an authorization, a webhook delivery) beside this release's. What each migration
// since records about the release before it is what this shows: on PostgreSQL it runs; on SQLite
// migration 0019 is recorded as not running with it, and this shows why: the previous release's
// window lock makes the dropped usage row anew with nothing spent, and approves past the limit.
// This release seals the signing key under it, which its running server does not notice. (The
// previous release predates the records, so it also refuses to start again on the migrated
// database: from this release on, a rollback starts on the records' word, see docs/operating.md "Upgrading";
// and it could not read the sealed key.)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RELEASES } from "../../src/storage/releases.js";
import { Acceptance } from "../support/acceptance.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../support/database.js";
import { withDatabase } from "../support/old-database.js";
import type { Served } from "../support/process.js";
import { listUsers } from "./principal-cache-helpers.js";
import { checkOutRelease, runMigrate, serveRelease, startToEnd, TEST_SECRETS_KEY } from "../support/release.js";

const previous = RELEASES.at(-1)!;
const dir = mkdtempSync(join(tmpdir(), "tenant-upgrade-"));
const release = join(dir, "previous-release");
const ADMIN = { clientId: "upgrade-admin", clientSecret: "upgrade-admin-secret-0123456" };
const APP = "app-upgrade";

let database: TestDatabase;
let env: Record<string, string>;
const running: Served[] = [];
beforeAll(async () => {
  checkOutRelease(previous.commit, release);
  database = await createTestDatabase(dir);
  env = { DATABASE_URL: database.url, SECRETS_KEY: TEST_SECRETS_KEY, BOOTSTRAP_CLIENT_ID: ADMIN.clientId, BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret, RATE_LIMIT: "off" };
}, 600_000);
afterAll(async () => {
  for (const server of running) await server.stop();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const approvedState = (answer: { body: any }) => answer.body?.authorization?.state;

describe(`a rolling upgrade from the previous release (${previous.commit.slice(0, 7)})`, () => {
  it("the previous release's server answers the acceptance flows on the database this release migrates under it", { timeout: 300_000 }, async () => {
    const old = await serveRelease(env, release);
    running.push(old);
    const before = new Acceptance(old.url, ADMIN);
    const subject = (await before.subject()).body.user.id as string;
    expect((await before.limit(subject, APP, 100)).status).toBe(200);
    expect(approvedState(await before.authorize(subject, APP, 60, true))).toBe("SPEND_AUTHORIZATION_STATE_CAPTURED");
    const hook = await before.hook();
    expect(await before.deliver(hook)).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });

    const migrated = await runMigrate({ DATABASE_URL: database.url });
    expect(migrated.code, migrated.out).toBe(0);
    expect(migrated.stdout).toContain("0019_spend_usage_by_instant");
    const recorded = await withDatabase(database.url, (db) => db.selectFrom("migration_compatibility").select("compatible_from").where("name", "=", "0019_spend_usage_by_instant").executeTakeFirstOrThrow());

    // The previous release's server, still running, on the migrated database.
    const after = before;
    expect((await after.token()).status).toBe(200);
    const another = (await after.subject()).body.user.id as string;
    expect((await after.limit(another, APP, 50)).status).toBe(200);
    expect(approvedState(await after.authorize(another, APP, 20))).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
    expect(await after.deliver(hook)).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
    expect(await after.deliver(await after.hook())).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
    // Its GetEffective reads a window's usage row itself: the migration dropped them, and until a
    // decision seeds the row again it shows nothing spent (the caveat migrations.ts records for 0019).
    expect((await after.effective(subject, APP)).body.effective.usage.spent.units).toBe("0");
    // 60 of the 100 were spent before the migration: 60 more do not fit.
    const past = approvedState(await after.authorize(subject, APP, 60));
    if (testDialect() === "postgres") {
      expect(recorded.compatible_from, "0019 runs with the previous release on PostgreSQL").toBe(previous.lastMigration);
      expect(past).toBe("SPEND_AUTHORIZATION_STATE_DECLINED");
    } else {
      expect(recorded.compatible_from, "0019 does not run with the previous release on SQLite").toBe("0019_spend_usage_by_instant");
      expect(past, "the previous release on SQLite after 0019: the window's spend forgotten").toBe("SPEND_AUTHORIZATION_STATE_PENDING");
    }

    // This release beside it, on the same database, sees what the previous one wrote.
    const current = await serveRelease({ ...env, MIGRATE_AT_START: "0" });
    running.push(current);
    const now = new Acceptance(current.url, ADMIN);
    expect(await now.deliver(hook)).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
    expect((await now.effective(another, APP)).body.effective.usage.held).toMatchObject({ units: "20" });
    // This release sealed the signing key at its start. The previous release's server keeps it in
    // memory: both sign with it, and each takes its new tokens.
    const sealed = await withDatabase(database.url, (db) => db.selectFrom("signing_keys").select(["kid", "private_jwk"]).execute());
    expect(sealed.map((k) => (k.private_jwk as string).startsWith("{"))).toEqual([false]);
    for (const [server, api] of [[old, after], [current, now]] as const) {
      const token = (await api.token()).body.access_token as string;
      expect(decodeProtectedHeader(token).kid).toBe(sealed[0]!.kid);
      expect((await listUsers(server.url, token)).status).toBe(200);
    }
  });

  it("the previous release, which predates the records, refuses to start again on the migrated database", { timeout: 120_000 }, async () => {
    const run = await startToEnd(env, release);
    expect(run.code, run.out).toBe(1);
    expect(run.stderr).toContain("previously executed migration 0019_spend_usage_by_instant is missing");
  });
});
