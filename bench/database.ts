// The database of one run: a fresh SQLite file in a temporary folder, or a fresh PostgreSQL
// database created through the maintenance URL (BENCH_POSTGRES_URL overrides) and dropped after.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import type { Config } from "../src/config.js";

export type Dialect = "sqlite" | "postgres";

export const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface BenchDatabase {
  dialect: Dialect;
  /** DATABASE_URL for the server. */
  url: string;
  /** The same, as src/config.ts reads it (for openStorage). */
  config: Config["database"];
  /** A human description for the report, e.g. "PostgreSQL 15.4". */
  describe(): Promise<string>;
  drop(): Promise<void>;
}

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

export async function createBenchDatabase(dialect: Dialect, dir: string): Promise<BenchDatabase> {
  if (dialect === "sqlite") {
    const path = join(dir, "bench.sqlite");
    return {
      dialect,
      url: `sqlite:${path}`,
      config: { kind: "sqlite", path },
      describe: async () => {
        const { default: SQLite } = await import("better-sqlite3");
        const db = new SQLite(":memory:");
        const version = (db.prepare("select sqlite_version() as v").get() as { v: string }).v;
        db.close();
        return `SQLite ${version} (better-sqlite3, WAL, synchronous=NORMAL), a file on local disk`;
      },
      drop: async () => undefined,
    };
  }
  const name = `tenant_bench_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`create database ${name}`));
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    dialect,
    url: url.toString(),
    config: { kind: "postgres", url: url.toString() },
    describe: () => admin(async (c) => `PostgreSQL ${(await c.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]?.v ?? "?"} on ${url.hostname}:${url.port || 5432} (pool of 10 per server process)`),
    drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}
