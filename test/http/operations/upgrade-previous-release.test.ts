// A rolling upgrade from the previous release (the last of src/storage/releases.ts, its sources
// taken from git): its server serves a database, this release's `npm run migrate` migrates that
// database under it, and the previous release's server goes on answering the acceptance flows (a
// token, a limit, an authorization, a webhook delivery) beside this release's. What each migration
// since records about the release before it is what this shows: on PostgreSQL it runs; on SQLite
// migration 0019 is recorded as not running with it, and this shows why: the previous release's
// window lock makes the dropped usage row anew with nothing spent, and approves past the limit.
// This release seals the signing key under it, which its running server does not notice.
// Then the way back (docs/operating.md "Upgrading"): the previous release, which predates the
// records, refuses to start on the migrated database until `npm run migrate -- --down-to <it>` has
// made the database one it runs on (0019 undone on SQLite, the rest kept and hidden from its check;
// the signing keys opened, kept answers made whole); it then serves exactly what both releases
// wrote, replays an Authorize first answered by this release, and this release's `npm run migrate`
// brings the database back.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrationSteps } from "../../../src/storage/migrations/migration-list.js";
import { RELEASES } from "../../../src/storage/releases.js";
import { Acceptance } from "../../support/acceptance.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../../support/database.js";
import { withDatabase } from "../../support/old-database.js";
import type { Served } from "../../support/process.js";
import { listUsers } from "../identity/principal-cache-helpers.js";
import { checkOutRelease, runCommand, runMigrate, serveRelease, startToEnd, TEST_SECRETS_KEY } from "../../support/release.js";

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
/**
 * The previous release served as in production, its answers not checked against its own contract:
 * what later releases add to an answer (a field its contract does not know, such as the window's
 * count in a decision's usage) is served as written, which its development default would refuse.
 */
const serveOld = () => serveRelease({ ...env, VALIDATE_RESPONSES: "0" }, release);
const stopAll = async () => {
  for (const server of running.splice(0)) await server.stop();
};
/** What the tests after the first read of what it left. */
const left = { another: "", replayKey: "", replayed: undefined as unknown, hook: undefined as Awaited<ReturnType<Acceptance["hook"]>> | undefined };

describe(`a rolling upgrade from the previous release (${previous.commit.slice(0, 7)})`, () => {
  it("the previous release's server answers the acceptance flows on the database this release migrates under it", { timeout: 300_000 }, async () => {
    const old = await serveOld();
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
    // decision seeds the row again it shows nothing spent (the caveat 0019-spend-usage-by-instant.ts records).
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
    // An Authorize this release answers, kept by reference, to be replayed after the way back.
    Object.assign(left, { another, hook, replayKey: randomUUID() });
    const first = await now.authorize(another, APP, 5, false, left.replayKey);
    expect(approvedState(first)).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
    left.replayed = first.body;
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
    await stopAll();
    const run = await startToEnd(env, release);
    expect(run.code, run.out).toBe(1);
    expect(run.stderr).toContain("previously executed migration 0019_spend_usage_by_instant is missing");
  });

  it("npm run migrate -- --down-to <it>: the previous release starts, serves exactly what both wrote, and replays this release's Authorize", { timeout: 300_000 }, async () => {
    const down = await runCommand("src/commands/migrate.ts", ["--down-to", previous.commit.slice(0, 7)], { DATABASE_URL: database.url, SECRETS_KEY: TEST_SECRETS_KEY });
    expect(down.code, down.out).toBe(0);
    if (testDialect() === "sqlite") expect(down.stdout).toContain("undone 0019_spend_usage_by_instant\n");
    else expect(down.stdout).not.toContain("undone");
    expect(down.stdout).toContain("kept (release 3753460 runs with them): ");
    expect(down.stdout).toContain("signing keys opened for release 3753460, which reads them in the clear: 1");
    expect(down.stdout).toContain("kept answers made whole: ");
    const keys = await withDatabase(database.url, (db) => db.selectFrom("signing_keys").select("private_jwk").execute());
    expect(keys.map((k) => (k.private_jwk as string).startsWith("{"))).toEqual([true]);

    const old = await serveOld();
    running.push(old);
    const api = new Acceptance(old.url, ADMIN);
    expect((await api.token()).status).toBe(200);
    // The hold of 20 the previous release made and this release's hold of 5, of the limit of 50.
    expect((await api.effective(left.another, APP)).body.effective.usage.held).toMatchObject({ units: "25" });
    expect(approvedState(await api.authorize(left.another, APP, 26))).toBe("SPEND_AUTHORIZATION_STATE_DECLINED");
    expect(approvedState(await api.authorize(left.another, APP, 25))).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
    const replay = await api.authorize(left.another, APP, 5, false, left.replayKey);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(left.replayed);
    expect(await api.deliver(left.hook!)).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
  });

  it("this release's npm run migrate brings the database back: this release serves what the previous one wrote", { timeout: 300_000 }, async () => {
    await stopAll();
    const migrated = await runMigrate({ DATABASE_URL: database.url });
    expect(migrated.code, migrated.out).toBe(0);
    if (testDialect() === "sqlite") expect(migrated.stdout).toContain("applied 0019_spend_usage_by_instant\n");
    const applied = await withDatabase(database.url, (db) => db.selectFrom("kysely_migration").select("name").orderBy("name").execute());
    expect(applied.at(-1)?.name).toBe(migrationSteps(testDialect()).at(-1)!.name);
    const current = await serveRelease({ ...env, MIGRATE_AT_START: "0" });
    running.push(current);
    const now = new Acceptance(current.url, ADMIN);
    expect((await now.effective(left.another, APP)).body.effective.usage.held).toMatchObject({ units: "50" });
    expect(approvedState(await now.authorize(left.another, APP, 1))).toBe("SPEND_AUTHORIZATION_STATE_DECLINED");
    const keys = await withDatabase(database.url, (db) => db.selectFrom("signing_keys").select("private_jwk").execute());
    expect(keys.map((k) => (k.private_jwk as string).startsWith("{"))).toEqual([false]);
  });
});
