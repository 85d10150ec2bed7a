// The spend functions reach a window's usage row by its primary key however small the usage table
// is (migration 0036): a sequential scan there read every window's row at every decision. A
// function that a later migration creates or replaces without `set enable_seqscan = off` fails the
// first test; the second shows the plan a decision's statements get on a hundred windows.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { openStorage } from "../../src/storage/connect.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../support/database.js";

const WINDOW = { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" };
const NOW = "2026-11-30T05:29:25.563Z";

describe.skipIf(testDialect() !== "postgres")("the spend functions' plans on spend_usage (PostgreSQL)", () => {
  let dir: string;
  let database: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "spend-usage-plans-"));
    database = await createTestDatabase(dir);
    const storage = await openStorage(loadConfig({ DATABASE_URL: database.url }).database);
    await storage.close();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(
      `insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
       select 'user-' || g, 'app', $1, $2, 0, 0, $3 from generate_series(1, 100) g`,
      [WINDOW.start, WINDOW.end, NOW],
    );
    await client.query("analyze spend_usage");
  }, 120_000);

  afterAll(async () => {
    await client?.end();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("every PL/pgSQL function with a statement on spend_usage is planned without a sequential scan", async () => {
    const { rows } = await client.query<{ fn: string; config: string[] | null }>(
      `select p.oid::regprocedure::text as fn, p.proconfig as config from pg_proc p
       where p.pronamespace = 'public'::regnamespace and p.prolang = (select oid from pg_language where lanname = 'plpgsql')
         and p.prosrc ~ '\\m(from|update|into)\\s+spend_usage\\M'`,
    );
    expect(rows.map((r) => r.fn)).toEqual(expect.arrayContaining([expect.stringMatching(/^spend_authorize\(/), expect.stringMatching(/^spend_change\(/), "spend_held_counter()", expect.stringMatching(/^spend_lock_window\(/)]));
    expect(rows.filter((r) => !(r.config ?? []).includes("enable_seqscan=off")).map((r) => r.fn)).toEqual([]);
  });

  it("a window's lock and its held counter read the one row by its key on a hundred windows", async () => {
    const plans: string[] = [];
    client.on("notice", (n) => plans.push(n.message ?? ""));
    await client.query("load 'auto_explain'");
    await client.query("set auto_explain.log_min_duration = 0; set auto_explain.log_nested_statements = on; set client_min_messages = log");
    await client.query("begin");
    // The window's lock and usage, then a hold's insert: its trigger adds it to the held counter.
    await client.query("select * from spend_lock_window('user-7', 'app', $1, $2, $3)", [WINDOW.start, WINDOW.end, NOW]);
    await client.query(
      `insert into spend_authorizations (id, user_id, app_id, currency_code, amount_nanos, captured_nanos, reversed_nanos, state,
         expires_at, window_start, window_end, decision, metadata, created_at, updated_at)
       values ('sa-1', 'user-7', 'app', 'USD', 5, 0, 0, 'PENDING', '2026-11-30T05:39:25.563Z', $1, $2, '{}', '{}', $3, $3)`,
      [WINDOW.start, WINDOW.end, NOW],
    );
    await client.query("rollback");
    const onUsage = plans.filter((p) => /\bspend_usage\b/.test(p) && /Scan/.test(p));
    expect(onUsage.length).toBeGreaterThanOrEqual(2);
    expect(onUsage.filter((p) => /Seq Scan on spend_usage/.test(p))).toEqual([]);
  });
});
