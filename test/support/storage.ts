// Storage opened on a fresh test database (SQLite, or PostgreSQL with TEST_DATABASE=postgres) for
// each test of a file, for tests of the storage boundary without a server.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { loadConfig } from "../../src/config.js";
import { openStorage, type Storage } from "../../src/storage/connect.js";
import { createTestDatabase, type TestDatabase } from "./database.js";

/** Registers the hooks; `.storage` is the current test's, migrated and empty. */
export function freshStorageEachTest(prefix: string): { storage: Storage } {
  const current = {} as { storage: Storage };
  let dir: string;
  let database: TestDatabase;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
    database = await createTestDatabase(dir);
    current.storage = await openStorage(loadConfig({ DATABASE_URL: database.url }).database);
  });
  afterEach(async () => {
    await current.storage.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  return current;
}
