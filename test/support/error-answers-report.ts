// Global setup of the vitest runs: gives the test files a directory for the error answers their
// servers gave and, when the run ends, holds the contract's documented errors against them.
// With CHECK_DOCUMENTED_ERRORS=1 (set by `npm test` for its full SQLite run) every documented
// error example (a 4xx of an operation: its status, reason and message) must have been answered
// by a server in this run, so the contract shows no error the server never gives.
// ERROR_ANSWERS_OUT=<file> writes every answer seen, for whoever writes the contract's examples.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { declaredErrors, type DeclaredError } from "./declared-errors.js";
import type { SeenAnswer } from "./error-answers.js";

/**
 * Answers only a race can provoke: a request arriving while another with the same Idempotency-Key
 * runs. The concurrency tests of test/http/idempotency*.test.ts provoke them where a slow operation
 * makes the race certain; elsewhere a run may not see one, so they are not required here.
 */
const RACE_ONLY = new Set(["IDEMPOTENCY_KEY_IN_USE"]);

/** The documented errors no answer in `seen` matches (same operation, status, reason and message). */
export function unansweredExamples(declared: readonly DeclaredError[], seen: readonly SeenAnswer[]): DeclaredError[] {
  const answered = new Set(seen.map((a) => JSON.stringify([a.operationId, a.status, a.reason, a.message])));
  return declared.filter((d) => d.status < 500 && !RACE_ONLY.has(d.reason) && !answered.has(JSON.stringify([d.operationId, d.status, d.reason, d.message])));
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), "tenant-error-answers-"));
  project.provide("errorAnswersDir", dir);
  return () => {
    const seen = existsSync(dir) ? readdirSync(dir).flatMap((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as SeenAnswer[]) : [];
    rmSync(dir, { recursive: true, force: true });
    if (process.env.ERROR_ANSWERS_OUT) writeFileSync(process.env.ERROR_ANSWERS_OUT, JSON.stringify(seen, null, 1));
    if (process.env.CHECK_DOCUMENTED_ERRORS !== "1") return;
    const missing = unansweredExamples(declaredErrors, seen);
    if (missing.length > 0) {
      // vitest reports an error thrown here but still exits 0: set the exit code ourselves.
      process.exitCode = 1;
      console.error(
        `${missing.length} documented error examples were answered by no server in this run (the contract shows answers the server never gives):\n` +
          missing.map((m) => `  ${m.operationId} ${m.status} ${m.name}: ${m.reason} "${m.message}"`).join("\n"),
      );
    }
  };
}
