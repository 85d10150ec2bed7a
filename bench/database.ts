// The database of one run: a fresh SQLite file in a temporary folder, or a fresh PostgreSQL
// database created through the maintenance URL (BENCH_POSTGRES_URL overrides) and dropped after.
import { join } from "node:path";
import { createScratchDatabase, withAdminClient } from "../scripts/scratch-database.js";
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

/** `name`: the SQLite file's, for a second database beside the run's. */
export async function createBenchDatabase(dialect: Dialect, dir: string, name = "bench"): Promise<BenchDatabase> {
  if (dialect === "sqlite") {
    const path = join(dir, `${name}.sqlite`);
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
  const scratch = await createScratchDatabase(POSTGRES_ADMIN_URL, "tenant_bench");
  const url = new URL(scratch.url);
  return {
    dialect,
    url: scratch.url,
    config: { kind: "postgres", url: scratch.url },
    describe: () => withAdminClient(POSTGRES_ADMIN_URL, async (c) => `PostgreSQL ${(await c.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]?.v ?? "?"} on ${url.hostname}:${url.port || 5432} (pool of 10 per server process)`),
    drop: scratch.drop,
  };
}
