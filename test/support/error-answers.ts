// Setup file of every test file: watches each error answer of the servers this worker runs (the
// server publishes them on a diagnostics channel). An operation answering a status and reason its
// contract does not declare fails the file; every answer seen is written for the run's global
// teardown, which checks that each documented error was really answered (error-answers-report.ts).
import { randomUUID } from "node:crypto";
import { subscribe } from "node:diagnostics_channel";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, inject } from "vitest";
import { ERROR_ANSWERS_CHANNEL, type ErrorAnswer } from "../../src/http/error-answers.js";
import { isDeclared } from "./declared-errors.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Where each test file writes the error answers its servers gave. */
    errorAnswersDir: string;
  }
}

export interface SeenAnswer {
  operationId: string;
  status: number;
  reason: string;
  message: string;
  /** The whole answer, for whoever writes the contract's examples (ERROR_ANSWERS_OUT). */
  body: ErrorAnswer["body"];
}

const seen = new Map<string, SeenAnswer>();
const undeclared = new Set<string>();

subscribe(ERROR_ANSWERS_CHANNEL, (message) => {
  const { operationId, status, body } = message as ErrorAnswer;
  // Answers before routing (unknown route, parser refusals) belong to no operation; a 500 is never planned.
  if (operationId === undefined || status === 500) return;
  const reason = body.details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo")?.reason ?? "";
  seen.set(JSON.stringify([operationId, status, reason, body.message]), { operationId, status, reason, message: body.message, body });
  if (!isDeclared(operationId, status, reason)) undeclared.add(`${operationId} answered ${status} ${reason}: ${body.message}`);
});

afterAll(() => {
  const dir = inject("errorAnswersDir");
  if (dir && seen.size > 0) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${randomUUID()}.json`), JSON.stringify([...seen.values()]));
  }
  expect([...undeclared], "error answers the contract does not declare for the operation").toEqual([]);
});
