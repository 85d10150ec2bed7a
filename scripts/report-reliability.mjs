// `npm run report:reliability`: runs the reliability and security suites RELIABILITY.md lists (its
// "What is tested" table names their files) on SQLite and on PostgreSQL, then the chaos suite, with
// RELIABILITY_REPORT=1, so that their counts are written into RELIABILITY.md
// (test/support/reliability-report.ts). `npm test` runs the same suites and writes nothing.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

const report = readFileSync(new URL("../RELIABILITY.md", import.meta.url), "utf8");
const table = report.split("\n## What is tested\n")[1]?.split("\n## ")[0] ?? "";
const files = [...new Set([...table.matchAll(/`(test\/[^`]+\.test\.ts)`/g)].map((m) => m[1]))];
const chaos = files.filter((f) => f.startsWith("test/chaos/"));
const http = files.filter((f) => !chaos.includes(f));
if (http.length === 0 || chaos.length === 0) throw new Error("RELIABILITY.md's table names no suite file");

const run = (args, env = {}) => {
  const { status } = spawnSync("npx", ["vitest", "run", ...args], { stdio: "inherit", env: { ...process.env, RELIABILITY_REPORT: "1", ...env } });
  if (status !== 0) process.exit(status ?? 1);
};
run(http);
run(http, { TEST_DATABASE: "postgres" });
run(["--config", "vitest.chaos.config.ts"]);
