// The two ways a CEL expression of an automation fails: refused when the automation is saved (a
// 400 `CEL_INVALID` naming the field and the position), or failed when a step runs
// (`CelEvaluationError`, which fails the step and never escapes as a crash).
import { invalidArgument, type ApiError } from "../core/errors.js";

/** Why an evaluation failed. */
export type CelEvaluationErrorCode =
  /** The cost budget (evaluated nodes plus the size of produced strings and lists) ran out. */
  | "COST_EXCEEDED"
  /** The wall-clock budget ran out. */
  | "TIMEOUT"
  /** A runtime error of the expression: missing key, no matching overload, overflow, division by zero, bad regex... */
  | "EVALUATION_ERROR"
  /** The expression produced a value of the wrong type for its field (e.g. a skip condition that is not a bool). */
  | "RESULT_TYPE"
  /**
   * A value built, or a step's or an execution's outputs, over its size bound as JSON
   * (resource-budget.ts); or the context (`ctx.trigger`, `ctx.steps`) or the result too large or
   * too deep to convert.
   */
  | "VALUE_TOO_LARGE";

const MAX_MESSAGE_CHARS = 300;

/** Messages may quote payload values (a bad duration string, an unknown key): keep them short. */
export function clip(message: string): string {
  const firstLine = message.split("\n", 1)[0] ?? "";
  return firstLine.length > MAX_MESSAGE_CHARS ? `${firstLine.slice(0, MAX_MESSAGE_CHARS)}…` : firstLine;
}

/** A failed evaluation. Its message is for developers and the execution log; it fails the step. */
export class CelEvaluationError extends Error {
  /** The field of the automation the expression came from, e.g. `automationSteps[1].skipIfTrueCel`. */
  path: string | undefined;

  constructor(
    readonly code: CelEvaluationErrorCode,
    message: string,
    /** 0-based offset (in characters, i.e. code points) in the expression, when known. */
    readonly position?: number,
    options?: { cause?: unknown },
  ) {
    super(clip(message), options);
    this.name = "CelEvaluationError";
  }
}

/** The 400 for an expression refused at save time. `position` is a 0-based code-point offset. */
export function celInvalid(path: string, position: number, description: string): ApiError {
  const text = `${clip(description)} (at position ${position})`;
  return invalidArgument("CEL_INVALID", `${path}: ${text}`, {
    violations: [{ field: path, description: text }],
    metadata: { path, position: String(position) },
  });
}

/** Converts a UTF-16 offset (what the parser reports) into a code-point offset (what the contract means). */
export function codePointOffset(source: string, utf16Offset: number): number {
  const clamped = Math.max(0, Math.min(utf16Offset, source.length));
  let count = 0;
  for (let i = 0; i < clamped; i++) {
    const c = source.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < clamped) {
      const next = source.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}
