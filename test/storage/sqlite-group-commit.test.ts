// Group commit on SQLite: transactions queued in one turn of the event loop share a COMMIT, each in
// its own savepoint, and no caller hears of its outcome before that COMMIT.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, SqliteDialect, sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Database } from "../../src/storage/schema.js";
import { SqliteGroupCommit } from "../../src/storage/sqlite-group-commit.js";

let dir: string;
let file: string;
let db: Kysely<Database>;
let statements: string[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-group-commit-"));
  file = join(dir, "db.sqlite");
  const database = new SQLite(file);
  database.pragma("journal_mode = WAL");
  statements = [];
  db = new Kysely<Database>({ dialect: new SqliteDialect({ database }), log: (event) => void statements.push(event.query.sql) });
  await sql`create table t (k text primary key, v integer not null)`.execute(db);
  statements = [];
});

afterEach(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (k: string, v = 1) => (trx: Kysely<Database>) => sql`insert into t (k, v) values (${k}, ${v})`.execute(trx).then(() => k);
const rows = () => new SQLite(file, { readonly: true }).prepare("select k, v from t order by k").all() as Array<{ k: string; v: number }>;

describe("SqliteGroupCommit", () => {
  it("transactions queued together share one BEGIN IMMEDIATE ... COMMIT, each in a savepoint", async () => {
    const group = new SqliteGroupCommit(db);
    const keys = await Promise.all(Array.from({ length: 20 }, (_, i) => group.run(insert(`k${String(i).padStart(2, "0")}`))));
    expect(keys).toHaveLength(20);
    expect(statements.filter((s) => s === "commit")).toHaveLength(1);
    expect(statements.filter((s) => s === "begin immediate")).toHaveLength(1);
    expect(statements.filter((s) => s === "savepoint grouped")).toHaveLength(20);
    expect(rows()).toHaveLength(20);
  });

  it("a transaction that fails rolls back alone: its caller gets its error, the others commit", async () => {
    const group = new SqliteGroupCommit(db);
    const outcomes = await Promise.allSettled([
      group.run(insert("a")),
      group.run(async (trx) => {
        await insert("b")(trx);
        await insert("a")(trx); // primary key violation: b must go too
      }),
      group.run(async () => {
        throw new Error("domain rule broken");
      }),
      group.run(insert("c")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/domain rule broken/);
    expect(rows().map((r) => r.k)).toEqual(["a", "c"]);
  });

  it("a caller learns of its success only once the COMMIT is done: another connection sees the row", async () => {
    const group = new SqliteGroupCommit(db);
    const seenByOthers = await Promise.all(["x", "y", "z"].map((k) => group.run(insert(k)).then(() => rows().some((r) => r.k === k))));
    expect(seenByOthers).toEqual([true, true, true]);
  });

  it("a long queue is committed in batches of at most 64, in the order it was queued", async () => {
    const group = new SqliteGroupCommit(db);
    const order: number[] = [];
    await Promise.all(Array.from({ length: 150 }, (_, i) => group.run(async (trx) => (order.push(i), insert(`k${String(i).padStart(3, "0")}`)(trx)))));
    expect(statements.filter((s) => s === "commit")).toHaveLength(3);
    expect(order).toEqual(Array.from({ length: 150 }, (_, i) => i));
    expect(rows()).toHaveLength(150);
  });

  it("work queued while a batch runs goes into the next one", async () => {
    const group = new SqliteGroupCommit(db);
    let late: Promise<string> | undefined;
    await group.run(async (trx) => {
      late = group.run(insert("late"));
      return insert("first")(trx);
    });
    expect(await late).toBe("late");
    expect(statements.filter((s) => s === "commit")).toHaveLength(2);
    expect(rows().map((r) => r.k)).toEqual(["first", "late"]);
  });
});
