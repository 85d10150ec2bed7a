// Global setup of the vitest runs: gives the suites a directory for their tallies and, when the run
// ends and RELIABILITY_REPORT=1 (`npm run report:reliability`), folds them into the counts table of
// RELIABILITY.md; a plain test run changes no tracked file. Rows of suites that did not run this
// time are kept as they were.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import type { Tally } from "./reliability.js";

export const REPORT_PATH = fileURLToPath(new URL("../../RELIABILITY.md", import.meta.url));
const BEGIN = "<!-- counts:begin (rewritten by the suites at the end of each run) -->";
const END = "<!-- counts:end -->";
const HEADER = ["| Suite | Database | Cases tried | Passed | Last run |", "|---|---|---:|---:|---|"];

interface Row extends Tally {
  at: string;
}

function parseRows(table: string): Row[] {
  return table
    .split("\n")
    .map((line) => /^\| `?([^|`]+)`? \| ([^|]+) \| (\d+) \| (\d+) \| ([^|]+) \|$/.exec(line.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ suite: m[1]!.trim(), database: m[2]!.trim(), tried: Number(m[3]), passed: Number(m[4]), at: m[5]!.trim() }));
}

/** The report with `tallies` folded into its counts table (summed per suite and database). */
export function foldCounts(report: string, tallies: readonly Tally[], at: string): string {
  const start = report.indexOf(BEGIN);
  const end = report.indexOf(END);
  if (start < 0 || end < start) throw new Error(`RELIABILITY.md lacks the ${BEGIN} ... ${END} markers`);
  const rows = new Map(parseRows(report.slice(start + BEGIN.length, end)).map((r) => [`${r.suite}|${r.database}`, r]));
  const fresh = new Map<string, Row>();
  for (const t of tallies) {
    const key = `${t.suite}|${t.database}`;
    const row = fresh.get(key) ?? { suite: t.suite, database: t.database, tried: 0, passed: 0, at };
    row.tried += t.tried;
    row.passed += t.passed;
    fresh.set(key, row);
  }
  for (const [key, row] of fresh) rows.set(key, row);
  const lines = [...rows.values()]
    .sort((a, b) => a.suite.localeCompare(b.suite) || a.database.localeCompare(b.database))
    .map((r) => `| \`${r.suite}\` | ${r.database} | ${r.tried} | ${r.passed} | ${r.at} |`);
  return `${report.slice(0, start)}${BEGIN}\n${[...HEADER, ...lines].join("\n")}\n${report.slice(end)}`;
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), "tenant-reliability-"));
  project.provide("reliabilityDir", dir);
  return () => {
    const tallies = existsSync(dir) ? readdirSync(dir).map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Tally) : [];
    rmSync(dir, { recursive: true, force: true });
    if (process.env.RELIABILITY_REPORT !== "1" || tallies.length === 0 || !existsSync(REPORT_PATH)) return;
    writeFileSync(REPORT_PATH, foldCounts(readFileSync(REPORT_PATH, "utf8"), tallies, new Date().toISOString().slice(0, 10)));
  };
}
