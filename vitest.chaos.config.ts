// `npm run test:chaos`: webhook load while server processes are killed (SIGKILL) and restarted, on
// SQLite and on PostgreSQL. Minutes long, so kept out of the default run.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/chaos/**/*.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    // One file at a time: the suite measures how servers recover, not how the machine copes.
    maxWorkers: 1,
    // Its PostgreSQL half runs on TEST_POSTGRES_URL, or on an embedded server when that is not reachable.
    globalSetup: ["test/support/reliability-report.ts", "test/support/postgres-global-setup.ts"],
  },
});
