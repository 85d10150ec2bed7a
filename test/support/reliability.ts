// Counts of the reliability and security suites, for RELIABILITY.md. Each suite tallies its cases
// (a table row, a fast-check run, a chaos event id) as tried and passed, and writes the tally when
// it ends; the run's global teardown (test/support/reliability-report.ts) folds every tally into
// RELIABILITY.md, so the file always shows the counts of the last run of each suite.
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** Where suites write their tallies during this run (set by the global setup). */
    reliabilityDir: string;
  }
}

export interface Tally {
  /** Key of the suite in RELIABILITY.md, e.g. "races". */
  suite: string;
  /** "sqlite", "postgres" or a description of the setup. */
  database: string;
  tried: number;
  passed: number;
}

export interface Counter {
  /** Runs one case: counted as tried, and as passed when it does not throw. */
  check<T>(run: () => Promise<T>): Promise<T>;
  /** Counts cases checked elsewhere (e.g. `n` ids of a chaos run, `ok` of them verified). */
  add(tried: number, passed: number): void;
}

/** A counter for `suite` whose tally is written after the file's last test. */
export function reliabilitySuite(suite: string, database: string): Counter {
  const tally: Tally = { suite, database, tried: 0, passed: 0 };
  afterAll(() => {
    const dir = inject("reliabilityDir");
    if (!dir || tally.tried === 0) return;
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${randomUUID()}.json`), JSON.stringify(tally));
  });
  return {
    async check(run) {
      tally.tried++;
      const result = await run();
      tally.passed++;
      return result;
    },
    add(tried, passed) {
      tally.tried += tried;
      tally.passed += passed;
    },
  };
}
