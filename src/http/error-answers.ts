// Every error answer is published on a diagnostics channel for observers in the same process
// (metrics, or the contract tests that hold each answer against the contract's declared reasons).
// Publishing costs nothing while no one subscribes.
import { channel } from "node:diagnostics_channel";
import type { StatusBody } from "./status-body.js";

export interface ErrorAnswer {
  /** The operation that answered; undefined when no route matched or the HTTP parser refused the request. */
  operationId: string | undefined;
  status: number;
  body: StatusBody;
}

export const ERROR_ANSWERS_CHANNEL = "tenant-api:error-answer";
const errorAnswers = channel(ERROR_ANSWERS_CHANNEL);

export function publishErrorAnswer(answer: ErrorAnswer): void {
  if (errorAnswers.hasSubscribers) errorAnswers.publish(answer);
}
