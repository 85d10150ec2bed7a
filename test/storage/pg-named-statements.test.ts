// PostgreSQL: the texts of the hot queries (src/storage/prepared.ts) are sent as named statements,
// parsed once per connection; any other text goes unnamed, so nothing is left behind per variant.
// What a statement answers is the same either way, through a transaction's deferred BEGIN too.
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deferringBegin } from "../../src/storage/pg-deferred-begin.js";
import { prepared } from "../../src/storage/prepared.js";
import type { Database } from "../../src/storage/schema.js";
import { POSTGRES_ADMIN_URL, testDialect } from "../support/database.js";

let db: Kysely<Database>;

/** The statements prepared on the pool's one connection, by their text. */
const preparedTexts = async () => (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)).rows.map((r) => r.statement);

const echo = prepared((d, v: { value: string }) => d.selectNoFrom(sql<string>`${v.value}::text`.as("v")));

describe.skipIf(testDialect() !== "postgres")("named statements (PostgreSQL)", () => {
  beforeAll(() => {
    db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: deferringBegin(new pg.Pool({ connectionString: POSTGRES_ADMIN_URL, max: 1 })) }) });
  });
  afterAll(async () => {
    await db?.destroy();
  });

  it("a prepared query is named: prepared once on the connection, each run answering its own values", async () => {
    expect((await echo.execute(db, { value: "first" })).rows).toEqual([{ v: "first" }]);
    expect((await echo.execute(db, { value: "second" })).rows).toEqual([{ v: "second" }]);
    const texts = await preparedTexts();
    expect(texts.filter((t) => t.includes("::text as \"v\""))).toHaveLength(1);
  });

  it("a query built per request is not named", async () => {
    await sql`select ${"ad hoc"}::text as ad_hoc`.execute(db);
    expect((await preparedTexts()).some((t) => t.includes("ad_hoc"))).toBe(false);
  });

  it("a named statement after a deferred BEGIN runs in the transaction, and a failed one leaves the name usable", async () => {
    const inside = await db.transaction().execute(async (trx) => (await echo.execute(trx, { value: "in a transaction" })).rows);
    expect(inside).toEqual([{ v: "in a transaction" }]);
    await expect(db.transaction().execute(async (trx) => {
      await echo.execute(trx, { value: "rolled back" });
      await sql`select 1/0`.execute(trx);
    })).rejects.toThrow(/division by zero/);
    expect((await echo.execute(db, { value: "after" })).rows).toEqual([{ v: "after" }]);
  });
});
