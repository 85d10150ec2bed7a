// `npm run migrate` as a process, on the test database (SQLite, or PostgreSQL in that leg):
// - each migration is applied in a transaction of its own: one that fails rolls back alone, the
//   ones before it stay applied (and say so), and the command run again once the cause is mended
//   applies the rest;
// - a migration that finds its tables locked by others waits for them at most lock_timeout at a
//   time (PostgreSQL) or busy_timeout (SQLite), says so, tries again, and applies once they are free;
// - a database of another application (tables, and no record of this service's migrations) is
//   refused, unchanged, by the command and by a server's start;
// - `--down-to` refuses, changing nothing: a name that is no release's, a migration the release does
//   not run with and that cannot be undone, and (SQLite) a file a server has open. The way back
//   itself is test/http/operations/upgrade-previous-release.test.ts's.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { migrateDatabase } from "../../../src/storage/migrate-up.js";
import { migrateDownTo } from "../../../src/storage/migrate-down.js";
import { migrationSteps, type MigrationStep } from "../../../src/storage/migrations/migration-list.js";
import { RELEASES } from "../../../src/storage/releases.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../../support/database.js";
import { withDatabase, writeOldDatabase } from "../../support/old-database.js";
import { runCommand, runMigrate, serveRelease, startToEnd, TEST_SECRETS_KEY } from "../../support/release.js";

const steps = migrationSteps(testDialect()).map((s) => s.name);
const AUDIT = "0025_audit_events";
const before = (name: string) => steps[steps.indexOf(name) - 1]!;

let dir: string;
let database: TestDatabase;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-migrations-steps-"));
  database = await createTestDatabase(dir);
});
afterEach(async () => {
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

const applied = () => withDatabase(database.url, async (db) => (await db.selectFrom("kysely_migration").select("name").orderBy("name").execute()).map((r) => r.name as string));

describe("npm run migrate, a migration at a time", () => {
  it("a migration that fails rolls back alone; those before it stay applied; run again once mended, it applies the rest", { timeout: 120_000 }, async () => {
    // An object in the way of migration 0025's table, as a hand-made table of an operator's would be.
    await writeOldDatabase(database.url, before(AUDIT), (db) => sql`create table audit_events (id text)`.execute(db).then(() => undefined));
    const failed = await runMigrate({ DATABASE_URL: database.url });
    expect(failed.code, failed.out).toBe(1);
    expect(failed.stderr).toContain(`migration failed: database migration ${AUDIT} failed, rolled back:`);
    expect(failed.stderr).toContain(`the migrations before it are applied (up to ${before(AUDIT)}): run the migrations again once the cause is mended`);
    expect(await applied()).toEqual(steps.slice(0, steps.indexOf(AUDIT)));

    await withDatabase(database.url, (db) => sql`drop table audit_events`.execute(db));
    const again = await runMigrate({ DATABASE_URL: database.url });
    expect(again.code, again.out).toBe(0);
    expect(again.stdout).toContain(`applied ${AUDIT}\n`);
    expect(await applied()).toEqual(steps);
  });

  it("a migration whose tables others hold waits, says so, tries again, and applies once they are free", { timeout: 120_000 }, async () => {
    const target = "0029_spend_foreign_keys_dropped";
    const blocked = testDialect() === "postgres" ? target : AUDIT;
    // In WAL mode, as a server leaves an SQLite file (the command's switch to it would wait on the holder).
    await writeOldDatabase(database.url, before(blocked), async (db) => {
      if (testDialect() === "sqlite") await sql`pragma journal_mode = wal`.execute(db);
    });
    // Held past the command's first attempts: a transaction that reads the table (PostgreSQL) or
    // holds the write lock (SQLite), released after eight seconds (the command takes a few to start).
    const env = { DATABASE_URL: database.url, SQLITE_BUSY_TIMEOUT_MS: "500" };
    const run = await withDatabase(database.url, async (db, dialect) =>
      db.connection().execute(async (holder) => {
        await sql`begin`.execute(holder);
        if (dialect === "postgres") await sql`lock table spend_ledger in access share mode`.execute(holder);
        else await sql`insert into settings (key, value) values ('held', 'by the test')`.execute(holder);
        const migrating = runMigrate(env);
        await new Promise((r) => setTimeout(r, 8_000));
        await sql`rollback`.execute(holder);
        return migrating;
      }),
    );
    expect(run.code, run.out).toBe(0);
    // SQLite's write lock is the whole database's: the first write of the command waits for it.
    const waiter = testDialect() === "postgres" ? blocked : "\\(the records of migrations\\)";
    expect(run.stderr).toMatch(new RegExp(`migration ${waiter} did not get its locks \\((sqlstate 55P03|SQLITE_BUSY); attempt 1 of 60\\)`));
    expect(run.stdout).toContain(`applied ${blocked}\n`);
    expect(await applied()).toEqual(steps);
  });
});

describe("a database that is not this service's", () => {
  it("is refused by npm run migrate and by a server's start (exit 2), and left as it was", { timeout: 120_000 }, async () => {
    await withDatabase(database.url, async (db) => {
      await sql`create table invoices (id integer primary key, total integer)`.execute(db);
      await sql`insert into invoices (id, total) values (1, 100)`.execute(db);
    });
    const tables = () =>
      withDatabase(database.url, async (db, dialect) =>
        (dialect === "sqlite"
          ? await sql<{ name: string }>`select name from sqlite_master where type = 'table' order by name`.execute(db)
          : await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() order by 1`.execute(db)
        ).rows.map((r) => r.name),
      );
    const migrated = await runMigrate({ DATABASE_URL: database.url });
    expect(migrated.code, migrated.out).toBe(2);
    expect(migrated.stderr).toContain("refusing to start: the database is not this service's: it holds tables (invoices) and no record of this service's migrations");
    const started = await startToEnd({ DATABASE_URL: database.url, SECRETS_KEY: TEST_SECRETS_KEY });
    expect(started.code, started.out).toBe(2);
    expect(started.stderr).toContain("the database is not this service's");
    expect(await tables()).toEqual(["invoices"]);
  });
});

describe("npm run migrate -- --down-to, refused", () => {
  const downTo = (release: string) => runCommand("src/commands/migrate.ts", ["--down-to", release], { DATABASE_URL: database.url, SECRETS_KEY: TEST_SECRETS_KEY });

  it("a name that is no release's (exit 2, naming the releases)", { timeout: 60_000 }, async () => {
    const run = await downTo("0000000");
    expect(run.code, run.out).toBe(2);
    expect(run.stderr).toContain(`configuration error: --down-to names no release of this one's record (src/storage/releases.ts) by its commit: ${RELEASES.map((r) => r.commit.slice(0, 7)).join(", ")}`);
  });

  it("a migration the release does not run with, which cannot be undone: named, and nothing changes", { timeout: 60_000 }, async () => {
    const ours = migrationSteps(testDialect());
    const later: MigrationStep = { name: "9001_a_contract", migration: { up: (db) => sql`create table contracted (id text)`.execute(db).then(() => undefined) }, earlierReleaseRuns: false, locks: [] };
    const thisRelease = { commit: "1111111111111111111111111111111111111111", lastMigration: ours.at(-1)!.name };
    const plan = { steps: [...ours, later], releases: [...RELEASES, thisRelease] };
    await withDatabase(database.url, (db, dialect) => migrateDatabase(db, dialect, true, plan), 2);
    const refused = await withDatabase(database.url, (db, dialect) => migrateDownTo(db, dialect, thisRelease, plan).then(() => "done", (e: Error) => e.message), 2);
    expect(refused).toBe("release 1111111 does not run on a database where 9001_a_contract was applied, and it cannot be undone (its file in src/storage/migrations/ says why): restore the backup taken before the upgrade");
    expect((await applied()).at(-1)).toBe("9001_a_contract");
  });

  it.skipIf(testDialect() !== "sqlite")("SQLite: a file a server has open", { timeout: 120_000 }, async () => {
    const server = await serveRelease({ DATABASE_URL: database.url, SECRETS_KEY: TEST_SECRETS_KEY, BOOTSTRAP_CLIENT_ID: "steps-admin", BOOTSTRAP_CLIENT_SECRET: "steps-admin-secret-0123456" });
    try {
      const run = await downTo(RELEASES.at(-1)!.commit.slice(0, 7));
      expect(run.code, run.out).toBe(2);
      expect(run.stderr).toContain("refusing to start: the database is open in another process, a server most likely: stop every server on it, then roll back");
      expect(await applied()).toEqual(steps);
    } finally {
      await server.stop();
    }
  });
});
