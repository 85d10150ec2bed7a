// The cost of a page must not grow with its depth: every funds list seeks into an index from the
// page token's position and reads the rows in index order (no scan from the start, no sort of the
// whole result). Checked on SQLite's query plan for the queries the services actually run, on a
// database with enough rows that the planner has a real choice.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { type CompiledQuery, Kysely, Migrator, SqliteDialect } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { createLogger } from "../../src/core/logger.js";
import { PageTokens } from "../../src/core/pagination.js";
import { AppCaps } from "../../src/funds/app-caps.js";
import { FundPolicies } from "../../src/funds/fund-policy.js";
import { SubjectAppLimits } from "../../src/funds/subject-app-limits.js";
import { Users } from "../../src/identity/users.js";
import type { Storage } from "../../src/storage/connect.js";
import { ChangeWatch } from "../../src/storage/change-versions.js";
import { migrationsFor } from "../../src/storage/migrations/migration-list.js";
import type { Database } from "../../src/storage/schema.js";

let dir: string;
let database: SQLite.Database;
let storage: Storage;
let limits: SubjectAppLimits;
let caps: AppCaps;
const executed: CompiledQuery[] = [];

const USERS = 200;
const APPS = 50;
const user = (i: number) => `u${String(i).padStart(4, "0")}`;
const app = (i: number) => `app-${String(i).padStart(3, "0")}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-plan-"));
  database = new SQLite(join(dir, "plan.sqlite"));
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }), log: (event) => void executed.push(event.query) });
  const { error } = await new Migrator({ db, provider: migrationsFor("sqlite") }).migrateToLatest();
  if (error) throw error;
  storage = { db, dialect: "sqlite", close: () => db.destroy() };

  // 10,000 rows, a few suspended and a few removed, and 1,000 caps.
  const now = "2026-11-20T09:00:00.000Z";
  const controls = JSON.stringify({ limit: { amount: { money: { currencyCode: "USD", units: "1", nanos: 0 } } } });
  database.transaction(() => {
    const addUser = database.prepare("insert into users (id, display_name, email, email_key, roles, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?)");
    const addRow = database.prepare(
      "insert into subject_app_limits (id, user_id, app_id, controls, suspended, amount_currency, created_at, updated_at, deleted_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    const addCap = database.prepare("insert into app_caps (id, app_id, controls, amount_currency, created_at, updated_at, deleted_at) values (?, ?, ?, ?, ?, ?, ?)");
    for (let u = 0; u < USERS; u++) {
      addUser.run(user(u), "U", `${user(u)}@example.com`, `${user(u)}@example.com`, '["ROLE_USER"]', now, now);
      for (let a = 0; a < APPS; a++) {
        addRow.run(`${u}-${a}`, user(u), app(a), controls, (u * APPS + a) % 97 === 0 ? 1 : 0, "USD", now, now, a % 13 === 0 ? now : null);
      }
    }
    for (let c = 0; c < 1000; c++) addCap.run(`c${c}`, `cap-${String(c).padStart(4, "0")}`, controls, "USD", now, now, null);
  })();
  database.exec("analyze");

  const clock = new ManualClock(Date.parse(now));
  const tokens = new PageTokens(Buffer.alloc(32, 7));
  const policy = new FundPolicies(storage, clock, "t", new ChangeWatch(storage, "fund_policy", createLogger("silent")));
  await policy.ensure("USD");
  limits = new SubjectAppLimits(storage, clock, new Users(storage, clock, tokens), policy, tokens, "t");
  caps = new AppCaps(storage, clock, policy, tokens, "t");
});

afterAll(async () => {
  await storage?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `page` and answers SQLite's plan of the last query it executed. */
async function planOf(page: () => Promise<unknown>): Promise<string[]> {
  executed.length = 0;
  await page();
  const query = executed[executed.length - 1]!;
  const rows = database.prepare(`explain query plan ${query.sql}`).all(...(query.parameters as unknown[])) as { detail: string }[];
  return rows.map((r) => r.detail);
}

/** A seek into `index` with no full scan and no sort of the result. */
function expectSeek(plan: string[], index: string): void {
  expect(plan.join("\n")).toMatch(new RegExp(`SEARCH subject_app_limits USING (COVERING )?INDEX ${index}|SEARCH app_caps USING (COVERING )?INDEX ${index}`));
  expect(plan.join("\n")).not.toMatch(/SCAN (subject_app_limits|app_caps)\b(?! USING)/);
  expect(plan.join("\n")).not.toMatch(/TEMP B-TREE/);
}

/** The token of the page that ends after `pages` pages of 10. */
async function deepToken(next: (token: string) => Promise<{ nextPageToken: string }>, pages: number): Promise<string> {
  let token = "";
  for (let i = 0; i < pages; i++) token = (await next(token)).nextPageToken;
  return token;
}

describe("keyset pages seek into an index at any depth", () => {
  it("Search without filters", async () => {
    const token = await deepToken((t) => limits.search({}, 100, t), 50);
    const plan = await planOf(() => limits.search({}, 100, token));
    expectSeek(plan, "subject_app_limits_live");
    const page = await limits.search({}, 100, token);
    expect(page.items).toHaveLength(100);
  });

  it("Search by user ids", async () => {
    const filters = { userIds: [user(3), user(150), user(199)] };
    const token = await deepToken((t) => limits.search(filters, 10, t), 5);
    expectSeek(await planOf(() => limits.search(filters, 10, token)), "subject_app_limits_live");
  });

  it("Search by suspension", async () => {
    const token = await deepToken((t) => limits.search({ suspended: true }, 10, t), 5);
    expectSeek(await planOf(() => limits.search({ suspended: true }, 10, token)), "subject_app_limits_by_suspended");
  });

  it("Search by app ids merges one bounded seek per app", async () => {
    const filters = { appIds: [app(1), app(7), app(20)] };
    const token = await deepToken((t) => limits.search(filters, 10, t), 10);
    const plan = await planOf(() => limits.search(filters, 10, token));
    const text = plan.join("\n");
    expect(text).toMatch(/MERGE \(UNION ALL\)/);
    const seeks = plan.filter((line) => line.startsWith("SEARCH subject_app_limits"));
    expect(seeks).toHaveLength(3);
    for (const seek of seeks) expect(seek).toMatch(/USING INDEX subject_app_limits_by_app \(app_id=\? AND user_id>\?\)/);
    expect(text).not.toMatch(/SCAN subject_app_limits/);
    // Each seek is cut at the page size, so the sorts in the plan handle at most size + 1 rows per app.
    const query = executed[executed.length - 1]!;
    expect(query.sql.match(/limit \?/g)).toHaveLength(4);
  });

  it("Search by app ids and user ids seeks the (user_id, app_id) index", async () => {
    const filters = { userIds: [user(1), user(2)], appIds: [app(1), app(7)] };
    expectSeek(await planOf(() => limits.search(filters, 10, "")), "subject_app_limits_live");
  });

  it("the caller's own rows", async () => {
    const token = await deepToken((t) => limits.listMine(user(42), 10, t), 2);
    expectSeek(await planOf(() => limits.listMine(user(42), 10, token)), "subject_app_limits_live");
  });

  it("app caps", async () => {
    const token = await deepToken((t) => caps.list(10, t), 50);
    expectSeek(await planOf(() => caps.list(10, token)), "app_caps_live");
  });
});
