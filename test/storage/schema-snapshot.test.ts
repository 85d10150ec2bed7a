// The schema a fresh database gets from the migrations, on each database, against the committed
// snapshot (test/fixtures/schema/): the migrations, one file each, are frozen, so what they make
// never changes but by a new migration. The snapshot was taken from the migrations as one file, so
// this also proves their split changed no SQL. Write it anew, after adding a migration, with
// UPDATE_SCHEMA_SNAPSHOT=1.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { schemaText } from "../../scripts/database-schema.js";
import { migrateDatabase } from "../../src/storage/migrate-up.js";
import { migrationSteps } from "../../src/storage/migrations/migration-list.js";
import { createTestDatabase, testDialect } from "../support/database.js";
import { withDatabase } from "../support/old-database.js";

const dialect = testDialect();
const SNAPSHOT = resolve(import.meta.dirname, `../fixtures/schema/${dialect}.txt`);
const dir = mkdtempSync(join(tmpdir(), "tenant-schema-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The migrations' names, what the release before does on each, and the tables each locks first. */
const stepsText = () =>
  migrationSteps(dialect)
    .map((s) => `${s.name} earlier-release-runs=${s.earlierReleaseRuns} locks=${s.locks.join(",")}`)
    .join("\n");

describe(`the schema the migrations make (${dialect})`, () => {
  it("is the committed snapshot, table by table, index by index, function by function", { timeout: 120_000 }, async () => {
    const database = await createTestDatabase(dir);
    try {
      const text = await withDatabase(database.url, async (db) => {
        await migrateDatabase(db, dialect, true);
        return `${stepsText()}\n\n${await schemaText(db, dialect)}`;
      }, 2);
      if (process.env.UPDATE_SCHEMA_SNAPSHOT === "1") writeFileSync(SNAPSHOT, text);
      expect(text).toBe(readFileSync(SNAPSHOT, "utf8"));
    } finally {
      await database.drop();
    }
  });
});
