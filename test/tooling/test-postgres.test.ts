// The PostgreSQL test leg's server: with TEST_POSTGRES_URL unreachable it starts a real embedded
// PostgreSQL, test databases are made on it the way the suites make them, and it is gone after stop.
import { statSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createScratchDatabase, withAdminClient } from "../../scripts/scratch-database.js";
import { postgresForTests, redactUrl, unreachableReason, type TestPostgres } from "../support/test-postgres.js";

const UNREACHABLE = "postgres://postgres@127.0.0.1:1/postgres";

describe("PostgreSQL for the tests, when TEST_POSTGRES_URL is not reachable", () => {
  let postgres: TestPostgres;
  beforeAll(async () => {
    postgres = await postgresForTests(UNREACHABLE);
  }, 120_000);
  afterAll(() => postgres?.stop());

  it("starts an embedded server and says so, naming the URL it could not reach", () => {
    expect(postgres.description).toMatch(
      /^embedded PostgreSQL \d+\.\d+ on 127\.0\.0\.1:\d+ \(postgres:\/\/postgres@127\.0\.0\.1:1\/postgres not reachable: .+\)$/,
    );
    expect(postgres.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
  });

  it("serves scratch databases as the suites create them, and runs their queries", async () => {
    const scratch = await createScratchDatabase(postgres.url, "tenant_fallback");
    try {
      await withAdminClient(scratch.url, async (c) => {
        await c.query("create table t (id bigint primary key, note text not null)");
        await c.query("insert into t values ($1, $2), ($3, $4)", ["9007199254740993", "a", "2", "b"]);
        const { rows } = await c.query<{ id: string; db: string }>("select id, current_database() as db from t order by id desc limit 1");
        expect(rows).toEqual([{ id: "9007199254740993", db: new URL(scratch.url).pathname.slice(1) }]);
      });
    } finally {
      await scratch.drop();
    }
    const left = await withAdminClient(postgres.url, (c) => c.query("select 1 from pg_database where datname like 'tenant_fallback_%'"));
    expect(left.rowCount).toBe(0);
  });

  it("runs the server as an unprivileged account, so it starts under root too", async () => {
    const dataDir = await withAdminClient(postgres.url, async (c) => (await c.query<{ d: string }>("select current_setting('data_directory') as d")).rows[0]!.d);
    const owner = statSync(dataDir).uid;
    expect(owner).not.toBe(0);
    if (process.getuid?.() !== 0) expect(owner).toBe(process.getuid?.());
  });

  it("uses a reachable server as it is, and leaves it running", async () => {
    const external = await postgresForTests(postgres.url);
    expect(external.description).toBe(`external ${postgres.url}`);
    expect(external.url).toBe(postgres.url);
    await external.stop();
    expect(await unreachableReason(postgres.url)).toBeUndefined();
  });

  it("stops the embedded server and deletes its cluster", async () => {
    const other = await postgresForTests(UNREACHABLE);
    const dataDir = await withAdminClient(other.url, async (c) => (await c.query<{ d: string }>("select current_setting('data_directory') as d")).rows[0]!.d);
    await other.stop();
    expect(await unreachableReason(other.url)).toBeDefined();
    expect(() => statSync(dataDir)).toThrow(/ENOENT/);
  }, 120_000);
});

describe("PostgreSQL for the tests, when neither works", () => {
  it("fails with both reasons, and no password in the message", async () => {
    const url = "postgres://postgres:hunter2@127.0.0.1:1/postgres";
    await expect(postgresForTests(url, () => Promise.reject(new Error("initdb exited with 1")))).rejects.toThrow(
      /^No PostgreSQL for the tests: postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/postgres is not reachable \(.+\), and the embedded PostgreSQL did not start: initdb exited with 1$/,
    );
    expect(redactUrl(url)).not.toContain("hunter2");
  });
});
