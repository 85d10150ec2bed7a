// Global setup of the runs that use PostgreSQL (`npm run test:postgres`, `npm run test:chaos`): finds
// or starts the server (test-postgres.ts), says which, and hands its URL to the test workers through
// TEST_POSTGRES_URL (vitest builds the workers' environment from this process's after global setup).
import { postgresForTests } from "./test-postgres.js";

export default async function setup(): Promise<() => Promise<void>> {
  const postgres = await postgresForTests();
  console.log(`PostgreSQL for tests: ${postgres.description}`);
  process.env.TEST_POSTGRES_URL = postgres.url;
  return () => postgres.stop();
}
