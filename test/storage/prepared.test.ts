// Prepared queries: built and compiled once per dialect, then run with each call's values in the
// places the compiled SQL has for them, inside transactions as well.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, SqliteDialect, sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { prepared } from "../../src/storage/prepared.js";
import type { Database } from "../../src/storage/schema.js";

let dir: string;
let db: Kysely<Database>;
let compiles: number;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-prepared-"));
  db = new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(join(dir, "db.sqlite")) }) });
  await sql`create table webhook_events (listener_id text, event_id text, automation_id text, received_at text, outcome text, not_run_reason text, execution_id text, primary key (listener_id, event_id))`.execute(db);
  compiles = 0;
});

afterEach(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const insert = prepared((d, v: { listener: string; event: string; at: string }) => {
  compiles++;
  return d.insertInto("webhook_events").values({ listener_id: v.listener, event_id: v.event, automation_id: "aut_fixed", received_at: v.at, outcome: "EXECUTED", not_run_reason: null, execution_id: null });
});

const since = prepared((d, v: { listener: string; from: string }) => {
  compiles++;
  return d.selectFrom("webhook_events").select(["event_id", "automation_id"]).where("listener_id", "=", v.listener).where("received_at", ">=", v.from).orderBy("event_id");
});

describe("prepared", () => {
  it("binds each call's values where the compiled SQL has them, keeping the builder's constants", async () => {
    await insert.execute(db, { listener: "wh_a", event: "e1", at: "2026-01-01" });
    await insert.execute(db, { listener: "wh_a", event: "e2", at: "2026-01-03" });
    await insert.execute(db, { listener: "wh_b", event: "e3", at: "2026-01-05" });
    expect((await since.execute(db, { listener: "wh_a", from: "2026-01-02" })).rows).toEqual([{ event_id: "e2", automation_id: "aut_fixed" }]);
    expect((await since.execute(db, { listener: "wh_b", from: "2026-01-01" })).rows).toEqual([{ event_id: "e3", automation_id: "aut_fixed" }]);
    expect((await since.execute(db, { listener: "wh_a", from: "2025-12-31" })).rows.map((r) => r.event_id)).toEqual(["e1", "e2"]);
  });

  it("compiles once per dialect, transactions included", async () => {
    for (let i = 0; i < 5; i++) await insert.execute(db, { listener: "wh_a", event: `e${i}`, at: "2026-01-01" });
    await db.transaction().execute((trx) => insert.execute(trx, { listener: "wh_a", event: "in-trx", at: "2026-01-01" }));
    await db.connection().execute((conn) => since.execute(conn, { listener: "wh_a", from: "2026-01-01" }));
    expect(compiles).toBe(2);
  });

  it("reports the rows a write changed", async () => {
    expect((await insert.execute(db, { listener: "wh_a", event: "e1", at: "2026-01-01" })).numAffectedRows).toBe(1n);
  });

  it("a value that looks like a stand-in is only a value", async () => {
    await insert.execute(db, { listener: "\u0000binding:event", event: "\u0000binding:listener", at: "2026-01-01" });
    expect((await since.execute(db, { listener: "\u0000binding:event", from: "2026-01-01" })).rows).toEqual([{ event_id: "\u0000binding:listener", automation_id: "aut_fixed" }]);
  });

  it("a missing value is an error naming it, not a NULL", async () => {
    await expect(since.execute(db, { listener: "wh_a" } as never)).rejects.toThrow(/no value for "from"/);
  });
});
