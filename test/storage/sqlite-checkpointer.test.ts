// The WAL's checkpoints run on a worker thread, not in the serving connection's commits; the log
// stays bounded, and without a worker the serving connection checkpoints by itself as by default.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import SQLite from "better-sqlite3";
import { Kysely, SqliteDialect, sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStorage, type Storage } from "../../src/storage/connect.js";
import type { Database } from "../../src/storage/schema.js";
import { CHECKPOINTER_DEFAULTS, startCheckpointer } from "../../src/storage/sqlite-checkpointer.js";

const { intervalMs, fallbackPages } = CHECKPOINTER_DEFAULTS;

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-checkpointer-"));
  file = join(dir, "db.sqlite");
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

const PAGE = 4096;
const size = (path: string) => statSync(path).size;

/** Commits `pages` rows of a page each, a commit per ten, yielding between commits as a server does. */
async function write(storage: Pick<Storage, "db">, pages: number): Promise<void> {
  await sql`create table if not exists filler (v blob not null)`.execute(storage.db);
  for (let i = 0; i < pages; i += 10) {
    await storage.db.transaction().execute(async (trx) => {
      for (let j = 0; j < 10; j++) await sql`insert into filler (v) values (randomblob(${PAGE - 100}))`.execute(trx);
    });
    await sleep(1);
  }
}

function walDatabase(): { database: SQLite.Database; storage: Pick<Storage, "db"> } {
  const database = new SQLite(file);
  database.pragma("journal_mode = WAL");
  return { database, storage: { db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }) } };
}

describe("WAL checkpoints on a worker thread", () => {
  it("the storage's worker copies the log into the database file; the serving connection checkpoints only past the fallback", async () => {
    const storage = await openStorage({ kind: "sqlite", path: file });
    try {
      const autocheckpoint = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(storage.db);
      expect(autocheckpoint.rows[0]?.wal_autocheckpoint).toBe(fallbackPages);
      // 2,000 pages: under the fallback, so only the worker can have moved them into the database file.
      await write(storage, 2_000);
      await sleep(intervalMs * 3);
      expect(size(file)).toBeGreaterThan(2_000 * PAGE * 0.9);
    } finally {
      await storage.close();
    }
  });

  it("the log stays bounded by the fallback while commits never leave it wholly copied", async () => {
    const { database, storage } = walDatabase();
    const checkpointer = await startCheckpointer(database, file, { fallbackPages: 300 });
    try {
      await write(storage, 3_000);
      // Past 300 pages the serving connection finishes the worker's copy and the log restarts: the
      // file never held all 12 MB at once.
      expect(size(`${file}-wal`)).toBeLessThan(1_000 * PAGE);
      expect(size(file)).toBeGreaterThan(3_000 * PAGE * 0.9);
    } finally {
      await checkpointer.stop();
      database.close();
    }
  });

  it("without the worker, the serving connection goes back to SQLite's default checkpoint", async () => {
    const database = new SQLite(file);
    try {
      database.pragma("journal_mode = WAL");
      // A path the worker cannot open: it fails before it is ready.
      await expect(startCheckpointer(database, join(dir, "missing", "db.sqlite"))).rejects.toThrow();
      await sleep(10);
      expect(database.pragma("wal_autocheckpoint", { simple: true })).toBe(1_000);
    } finally {
      database.close();
    }
  });

  it("stop() ends the worker; the storage closes without waiting on it", async () => {
    const database = new SQLite(file);
    try {
      database.pragma("journal_mode = WAL");
      const checkpointer = await startCheckpointer(database, file);
      expect(database.pragma("wal_autocheckpoint", { simple: true })).toBe(fallbackPages);
      await checkpointer.stop();
      // Asked to stop: the serving connection is about to close, its setting is left as it was.
      expect(database.pragma("wal_autocheckpoint", { simple: true })).toBe(fallbackPages);
    } finally {
      database.close();
    }
  });
});

describe("closing the storage", () => {
  it("waits for the worker to exit in a process with nothing else pending, then carries on", () => {
    // A script's own process, as a tool opening the database runs (vitest keeps its workers alive).
    const root = join(import.meta.dirname, "../..");
    const script = join(dir, "close.mts");
    writeFileSync(
      script,
      `import { openStorage } from ${JSON.stringify(join(root, "src/storage/connect.ts"))};
      import { writeStatement } from ${JSON.stringify(join(root, "src/storage/transactions.ts"))};
      const storage = await openStorage({ kind: "sqlite", path: ${JSON.stringify(file)} });
      for (let i = 0; i < 20; i++) await writeStatement(storage, (db) => db.deleteFrom("idempotency_records").execute());
      await storage.close();
      console.log("closed");`,
    );
    const run = spawnSync(join(root, "node_modules/.bin/tsx"), [script], { cwd: root, encoding: "utf8" });
    expect({ status: run.status, out: run.stdout.trim() }, run.stderr).toEqual({ status: 0, out: "closed" });
  });
});
