// Migrations as an operator runs them, through real processes on the test database (SQLite, or
// PostgreSQL in that leg): with MIGRATE_AT_START=0 the server refuses a database that lacks
// migrations, `npm run migrate` applies them, and the server then starts; and a rollback: this
// release starts on a database that a later release migrated further, as long as the later
// migrations were written to run with it, and refuses clearly when one was not.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateDatabase, type MigrationPlan } from "../../../src/storage/migrate-up.js";
import { migrationSteps, type MigrationStep } from "../../../src/storage/migrations/migration-list.js";
import { RELEASES } from "../../../src/storage/releases.js";
import { Acceptance } from "../../support/acceptance.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../../support/database.js";
import { withDatabase } from "../../support/old-database.js";
import { runMigrate, serveRelease, startToEnd, TEST_SECRETS_KEY } from "../../support/release.js";

const dir = mkdtempSync(join(tmpdir(), "tenant-migrations-"));
const ADMIN = { clientId: "migrations-admin", clientSecret: "migrations-admin-secret-0123" };
const ours = migrationSteps(testDialect());
const lastOfOurs = ours.at(-1)!.name;

let database: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  database = await createTestDatabase(dir);
  env = { DATABASE_URL: database.url, SECRETS_KEY: TEST_SECRETS_KEY, BOOTSTRAP_CLIENT_ID: ADMIN.clientId, BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret };
});
afterAll(async () => {
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const applied = (url: string) => withDatabase(url, async (db) => (await db.selectFrom("kysely_migration").select("name").orderBy("name").execute()).map((r) => r.name as string));
const records = (url: string) => withDatabase(url, async (db) => Object.fromEntries((await db.selectFrom("migration_compatibility").selectAll().execute()).map((r) => [r.name, r.compatible_from])));

/** A later release's migration, the one after ours: written to run with this release (`runsWithUs`) or not. */
function laterStep(offset: number, runsWithUs: boolean, up: (db: Kysely<any>) => Promise<void>): MigrationStep {
  const name = `${String(Number(lastOfOurs.slice(0, 4)) + offset).padStart(4, "0")}_a_later_release${runsWithUs ? "" : "_contract"}`;
  return { name, migration: { up }, earlierReleaseRuns: runsWithUs, locks: [] };
}

/** Migrates the database as the release after this one would: our migrations, then `later`, this release recorded as released. */
const migrateAsLaterRelease = (later: MigrationStep[]) =>
  withDatabase(
    database.url,
    (db, dialect) => {
      const plan: MigrationPlan = { steps: [...ours, ...later], releases: [...RELEASES, { commit: "this release", lastMigration: lastOfOurs }] };
      return migrateDatabase(db, dialect, true, plan);
    },
    // PostgreSQL: the migrations' lock is held on a connection of its own.
    2,
  );

describe("MIGRATE_AT_START=0 and npm run migrate", () => {
  it("refuses to start on a database that lacks migrations (exit 2, saying what to run), and changes nothing", { timeout: 90_000 }, async () => {
    const run = await startToEnd({ ...env, MIGRATE_AT_START: "0" });
    expect(run.code, run.out).toBe(2);
    expect(run.stderr).toContain(`refusing to start: the database lacks ${ours.length} migration(s) this release needs (${ours[0]!.name} to ${lastOfOurs}) and MIGRATE_AT_START=0: run \`npm run migrate\``);
    const tables = await withDatabase(database.url, async (db) => (await db.introspection.getTables({ withInternalKyselyTables: true })).map((t) => t.name));
    expect(tables).toEqual([]);
  });

  it("npm run migrate applies them, with their records; then the server starts with MIGRATE_AT_START=0 and serves", { timeout: 120_000 }, async () => {
    const migrated = await runMigrate({ DATABASE_URL: database.url });
    expect(migrated.code, migrated.out).toBe(0);
    expect(migrated.stdout).toBe(ours.map((s) => `applied ${s.name}\n`).join("") + `migrations applied: ${ours.map((s) => s.name).join(", ")}\n`);
    expect(await applied(database.url)).toEqual(ours.map((s) => s.name));
    // 0019 is recorded as running with the release before it on PostgreSQL only (see its file in src/storage/migrations/).
    const recorded = await records(database.url);
    expect(recorded["0019_spend_usage_by_instant"]).toBe(testDialect() === "postgres" ? RELEASES.at(-1)!.lastMigration : "0019_spend_usage_by_instant");
    expect(Object.keys(recorded).sort()).toEqual(ours.map((s) => s.name));

    const again = await runMigrate({ DATABASE_URL: database.url });
    expect(again.stdout).toBe("migrations: none pending\n");
    const server = await serveRelease({ ...env, MIGRATE_AT_START: "0" });
    try {
      expect((await new Acceptance(server.url, ADMIN).token()).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});

describe("a database a later release migrated further (a rollback)", () => {
  it("starts when the later migration runs with this release, and serves the acceptance flows", { timeout: 180_000 }, async () => {
    const expand = laterStep(1, true, async (db) => {
      await db.schema.createTable("later_release_notes").addColumn("id", "text", (c) => c.primaryKey()).execute();
      await db.schema.alterTable("users").addColumn("locale", "text").execute();
    });
    expect(await migrateAsLaterRelease([expand])).toEqual([expand.name]);
    expect((await records(database.url))[expand.name]).toBe(lastOfOurs);

    for (const migrateAtStart of ["1", "0"]) {
      const server = await serveRelease({ ...env, MIGRATE_AT_START: migrateAtStart });
      try {
        const api = new Acceptance(server.url, ADMIN);
        expect((await api.token()).status).toBe(200);
        const subject = await api.subject();
        expect(subject.status).toBe(200);
        expect((await api.limit(subject.body.user.id, "app-rollback", 100)).status).toBe(200);
        expect((await api.authorize(subject.body.user.id, "app-rollback", 30)).body.authorization.state).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
        expect(await api.deliver(await api.hook())).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
      } finally {
        await server.stop();
      }
    }
    // Nothing of the later release's was undone or run again.
    expect(await applied(database.url)).toEqual([...ours.map((s) => s.name), expand.name]);
  });

  it("refuses to start (exit 2, naming the migration) when a later migration does not run with this release; npm run migrate too", { timeout: 120_000 }, async () => {
    const contract = laterStep(2, false, async (db) => {
      await sql`drop table later_release_notes`.execute(db);
    });
    await migrateAsLaterRelease([laterStep(1, true, async () => undefined), contract]);
    const run = await startToEnd(env);
    expect(run.code, run.out).toBe(2);
    expect(run.stderr).toContain(`refusing to start: the database has migration ${contract.name}, applied by a later release that runs only with releases that know migration ${contract.name}; this release knows migrations up to ${lastOfOurs}`);
    const migrate = await runMigrate({ DATABASE_URL: database.url });
    expect(migrate.code, migrate.out).toBe(2);
    expect(migrate.stderr).toContain(`the database has migration ${contract.name}`);
  });
});
