// PostgreSQL: a transaction's BEGIN goes with its first statement when that has no parameters, and
// alone first otherwise; what a transaction does is unchanged either way. Values written into a
// statement as literals come back exactly, quotes and backslashes included.
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { deferringBegin, inlineParameters } from "../../src/storage/pg-deferred-begin.js";
import type { Database } from "../../src/storage/schema.js";
import { POSTGRES_ADMIN_URL, testDialect } from "../support/database.js";

const sent: string[] = [];
const query = pg.Client.prototype.query;
let db: Kysely<Database>;

describe.skipIf(testDialect() !== "postgres")("deferred BEGIN (PostgreSQL)", () => {
  beforeAll(async () => {
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      if (typeof args[0] === "string") sent.push(args[0]);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: deferringBegin(new pg.Pool({ connectionString: POSTGRES_ADMIN_URL, max: 1 })) }) });
    await sql`create temporary table t (v text)`.execute(db);
  });
  afterAll(async () => {
    pg.Client.prototype.query = query;
    await db?.destroy();
  });
  beforeEach(() => {
    sent.length = 0;
  });

  const literal = (v: string) => inlineParameters(sql<{ v: string }>`select ${v}::text as v`.compile(db));

  it("a first statement without parameters carries the BEGIN: one query, its own rows answered", async () => {
    const rows = await db.transaction().execute(async (trx) => (await trx.executeQuery(literal("x"))).rows);
    expect(rows).toEqual([{ v: "x" }]);
    expect(sent).toEqual(["begin;\nselect 'x'::text as v", "commit"]);
  });

  it("inlines bigints (negative ones too) and booleans as what they are, next to strings and nulls", async () => {
    const query = inlineParameters(sql<{ n: string; b: boolean; s: string; z: null }>`select ${-9007199254740993n}::bigint - ${1n} as n, ${true} and not ${false} as b, ${"it's"}::text as s, ${null}::text as z`.compile(db));
    expect(query.parameters).toEqual([]);
    const [row] = (await db.executeQuery(query)).rows;
    expect(row).toEqual({ n: "-9007199254740994", b: true, s: "it's", z: null });
  });

  it("a first statement with parameters: BEGIN alone first", async () => {
    await db.transaction().execute((trx) => sql`insert into t values (${"p"})`.execute(trx));
    expect(sent).toEqual(["begin", "insert into t values ($1)", "commit"]);
  });

  it("a transaction that fails after the merged statement rolls back", async () => {
    const failing = db.transaction().execute(async (trx) => {
      await trx.executeQuery(inlineParameters(sql`insert into t values (${"rolled back"})`.compile(db)));
      throw new Error("fails");
    });
    await expect(failing).rejects.toThrow("fails");
    expect(sent.at(-1)).toBe("rollback");
    expect((await sql<{ n: string }>`select count(*) as n from t where v = 'rolled back'`.execute(db)).rows[0]?.n).toBe("0");
  });

  it("a transaction that ran nothing sends nothing", async () => {
    await db.transaction().execute(async () => undefined);
    expect(sent).toEqual([]);
  });

  it.each(["it's", "back\\slash", "\\'; drop table t; --", "$1 $$ $x$"])("the literal %j comes back exactly", async (value) => {
    expect((await db.executeQuery(literal(value))).rows).toEqual([{ v: value }]);
  });
});
