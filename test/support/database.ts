// The database a test server runs on: a fresh SQLite file by default, or, with
// TEST_DATABASE=postgres, a fresh PostgreSQL database created for the server and dropped after it,
// so test runs never see each other's data.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";

/** The maintenance connection used to create and drop test databases. */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export const testDialect = (): "sqlite" | "postgres" => (process.env.TEST_DATABASE === "postgres" ? "postgres" : "sqlite");

export interface TestDatabase {
  url: string;
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

export async function createTestDatabase(dir: string): Promise<TestDatabase> {
  if (testDialect() === "sqlite") return { url: `sqlite:${join(dir, "test.sqlite")}`, drop: async () => undefined };
  const name = `tenant_test_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`create database ${name}`));
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}
