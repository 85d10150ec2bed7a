import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Builds the console and makes sure Chromium is there, once per run (test/e2e drives them);
    // writes the reliability suites' counts into RELIABILITY.md and holds the documented errors
    // against the answers seen at the end of the run; on the PostgreSQL leg (TEST_DATABASE=postgres),
    // finds or starts the PostgreSQL server and says which.
    globalSetup: [
      "test/support/global-setup.ts",
      "test/support/reliability-report.ts",
      "test/support/error-answers-report.ts",
      ...(process.env.TEST_DATABASE === "postgres" ? ["test/support/postgres-global-setup.ts"] : []),
    ],
    // Every error answer of the servers a test file runs must be declared by its operation.
    setupFiles: ["test/support/error-answers.ts"],
    // The chaos suite kills and restarts server processes for minutes: `npm run test:chaos`.
    exclude: ["test/chaos/**", "node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Servers and mocks run as real processes on ephemeral ports; two cores, so two files at a time.
    maxWorkers: 2,
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
  },
});
