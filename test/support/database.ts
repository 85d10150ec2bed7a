// The database a test server runs on: a fresh SQLite file by default, or, with
// TEST_DATABASE=postgres, a fresh PostgreSQL database created for the server and dropped after it,
// so test runs never see each other's data.
import { join } from "node:path";
import { createScratchDatabase } from "../../scripts/scratch-database.js";
import { DEFAULT_POSTGRES_URL } from "./test-postgres.js";

/**
 * The maintenance connection used to create and drop test databases. In the PostgreSQL runs the
 * global setup (postgres-global-setup.ts) has set TEST_POSTGRES_URL to the server it found or started.
 */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL || DEFAULT_POSTGRES_URL;

export const testDialect = (): "sqlite" | "postgres" => (process.env.TEST_DATABASE === "postgres" ? "postgres" : "sqlite");

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(dir: string): Promise<TestDatabase> {
  if (testDialect() === "sqlite") return { url: `sqlite:${join(dir, "test.sqlite")}`, drop: async () => undefined };
  return createScratchDatabase(POSTGRES_ADMIN_URL, "tenant_test");
}
