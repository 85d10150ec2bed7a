// Each migration's `locks` (src/storage/migrations/migration-list.ts) on PostgreSQL are exactly the tables that
// existed before it and that it locks in a mode other than ACCESS SHARE (an index's lock counted
// as its table's), as pg_locks shows them at the end of its work: what the migration runner locks
// first, so that a migration never waits for a lock while holding one a request waits for
// (src/storage/migration-transaction.ts). A migration that takes a lock its list lacks, or lists a
// table it does not lock, fails here.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrationSteps } from "../../src/storage/migrations/migration-list.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../support/database.js";
import { withDatabase } from "../support/old-database.js";

const dir = mkdtempSync(join(tmpdir(), "tenant-migration-locks-"));
let database: TestDatabase;
beforeAll(async () => {
  if (testDialect() === "postgres") database = await createTestDatabase(dir);
});
afterAll(async () => {
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The tables of the connection's schema. */
const tables = async (db: Kysely<any>) => new Set((await sql<{ name: string }>`select relname as name from pg_class where relnamespace = current_schema()::regnamespace and relkind in ('r', 'p')`.execute(db)).rows.map((r) => r.name));

/** The tables this transaction holds a lock on other than ACCESS SHARE, an index's lock counted as its table's. */
async function lockedTables(db: Kysely<any>): Promise<Set<string>> {
  const { rows } = await sql<{ name: string }>`
    select distinct coalesce(t.relname, c.relname) as name
    from pg_locks l
    join pg_class c on c.oid = l.relation
    left join pg_index i on i.indexrelid = c.oid
    left join pg_class t on t.oid = i.indrelid
    where l.pid = pg_backend_pid() and l.locktype = 'relation' and l.mode <> 'AccessShareLock' and c.relnamespace = current_schema()::regnamespace`.execute(db);
  return new Set(rows.map((r) => r.name));
}

describe.skipIf(testDialect() !== "postgres")("the tables each migration locks first (PostgreSQL)", () => {
  it("every migration's `locks` are the tables before it that it locks other than ACCESS SHARE", { timeout: 120_000 }, async () => {
    const found: Record<string, string[]> = {};
    const declared: Record<string, string[]> = {};
    await withDatabase(database.url, async (db) => {
      for (const step of migrationSteps("postgres")) {
        const before = await tables(db);
        await db.transaction().execute(async (trx) => {
          await step.migration.up(trx);
          found[step.name] = [...(await lockedTables(trx))].filter((t) => before.has(t)).sort();
        });
        declared[step.name] = [...step.locks].sort();
      }
    });
    expect(declared).toEqual(found);
  });
});
