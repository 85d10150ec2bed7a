import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The chaos suite kills and restarts server processes for minutes: `npm run test:chaos`.
    exclude: ["test/chaos/**", "node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Servers and mocks run as real processes on ephemeral ports; two cores, so two files at a time.
    maxWorkers: 2,
    // Gives the reliability suites a place for their counts and writes them to RELIABILITY.md.
    globalSetup: ["test/support/reliability-report.ts"],
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
  },
});
