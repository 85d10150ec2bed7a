// The backup of an SQLite database ends while another connection commits without pause: SQLite
// restarts a backup at its next step after any other connection's write, so a backup in steps
// would copy for as long as the writes go on; it copies all pages in one step, one snapshot. And a
// target SQLite would take a file of the live database for a companion of is refused.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { afterEach, beforeEach, expect, it } from "vitest";
import { openStorage } from "../../src/storage/connect.js";
import { backupSqlite } from "../../src/storage/sqlite-backup.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-backup-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const COMMITS = 20_000;

it("a backup of a database written by another connection at every turn of the event loop ends while the writes go on, with the rows of one moment", async () => {
  const file = join(dir, "db.sqlite");
  await (await openStorage({ kind: "sqlite", path: file })).close();
  const writer = new SQLite(file);
  writer.pragma("journal_mode = WAL");
  writer.exec("create table filler (v blob not null)");
  // 3,000 pages: 30 steps of SQLite's usual 100.
  writer.exec("with recursive n(i) as (select 1 union all select i + 1 from n where i < 3000) insert into filler (v) select randomblob(4000) from n");
  const insert = writer.prepare("insert into filler (v) values (randomblob(100))");
  let commits = 0;
  const writing = new Promise<void>((resolve) => {
    const commit = () => {
      if (commits === COMMITS) return resolve();
      insert.run();
      commits++;
      setImmediate(commit);
    };
    setImmediate(commit);
  });
  try {
    const before = commits;
    const copy = await backupSqlite(file, join(dir, "backup.sqlite"), { replace: false });
    const after = commits;
    expect(after, "the backup ended while the writes went on").toBeLessThan(COMMITS);
    await writing;
    const backup = new SQLite(copy.path, { readonly: true });
    const rows = (backup.prepare("select count(*) as n from filler").get() as { n: number }).n;
    backup.close();
    expect(rows).toBeGreaterThanOrEqual(3_000 + before);
    expect(rows).toBeLessThanOrEqual(3_000 + after);
  } finally {
    await writing;
    writer.close();
  }
});

it("refuses a target SQLite would take the live database's file for a companion of: a database named <file>-journal is never backed up to <file>", async () => {
  const file = join(dir, "tenant-journal");
  await (await openStorage({ kind: "sqlite", path: file })).close();
  const target = join(dir, "tenant");
  await expect(backupSqlite(file, target, { replace: true })).rejects.toThrow(
    `${target}-journal, which SQLite would take for a file of ${target}, is the database of DATABASE_URL itself (${file}): name another file`,
  );
  expect(readdirSync(dir)).toEqual(["tenant-journal"]);
});
