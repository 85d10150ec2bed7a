// Runs a compiled expression against a step's context, within a cost, time and size budget. Every
// failure (runtime error, exhausted budget, wrong result type, oversized value) is a
// CelEvaluationError: a hostile payload fails the step, it never hangs or crashes the server. Two
// time guards: the budget's clock, and for expressions with a comprehension a vm script's timeout,
// which V8 enforces even inside a long built-in call. docs/automations.md, "CEL in steps".
import vm from "node:vm";
import { EvaluationError } from "@marcbachmann/cel-js";
import { UnsignedInt, Duration } from "@marcbachmann/cel-js/evaluator";
import { checkTimestamp, TIMESTAMP_RANGE, yearOutOfRange, type TimestampCheck } from "../core/timestamp.js";
import { clearActiveBudget, EvaluationBudget, withBudget } from "./cel-budget.js";
import { mayLoop, programOf, reloadProgram, type CompiledExpression } from "./cel-compile.js";
import { afterNode } from "./cel-environment.js";
import { CelEvaluationError, codePointOffset } from "./cel-errors.js";
import { toCelInput, toJsonValue, type CelInput, type JsonValue } from "./cel-values.js";

/** The context of a step: `ctx.trigger`, `ctx.webhook` and `ctx.steps` in expressions. */
export interface CelContext {
  /** The webhook's JSON body, or the fund event. */
  trigger: unknown;
  /** The webhook delivery's `{ eventId, eventType }`; null for a fund event. */
  webhook: { eventId: string; eventType: string | null } | null;
  /** The outputs of earlier steps by step name (absent for steps that were skipped); own properties (`setOwn`: a step may be named `__proto__`). */
  steps: Readonly<Record<string, unknown>>;
}

export interface EvaluationLimits {
  /** Cost budget: evaluated nodes plus the size of produced strings and lists. Default 1,000,000. */
  maxCost?: number;
  /** Wall-clock budget in milliseconds. Default 200. */
  timeoutMs?: number;
}

export const DEFAULT_EVALUATION_LIMITS = Object.freeze({ maxCost: 1_000_000, timeoutMs: 200 });
const MAX_COST_CEILING = 100_000_000;
const MAX_TIMEOUT_CEILING_MS = 10_000;
/** The hard stop comes this long after the cooperative time budget. */
export const HARD_TIMEOUT_GRACE_MS = 50;

function resolveLimits(limits: EvaluationLimits | undefined): { maxCost: number; timeoutMs: number } {
  const pick = (value: number | undefined, fallback: number, ceiling: number) =>
    value === undefined || !Number.isFinite(value) ? fallback : Math.min(Math.max(1, Math.floor(value)), ceiling);
  return {
    maxCost: pick(limits?.maxCost, DEFAULT_EVALUATION_LIMITS.maxCost, MAX_COST_CEILING),
    timeoutMs: pick(limits?.timeoutMs, DEFAULT_EVALUATION_LIMITS.timeoutMs, MAX_TIMEOUT_CEILING_MS),
  };
}

// ---- hard timeout -----------------------------------------------------------------------------

const sandbox = vm.createContext(Object.create(null) as object);
const runScript = new vm.Script("__run()", { filename: "cel-evaluation" });

/** Runs `fn` (synchronous) and terminates it when it runs longer than `timeoutMs`. */
function runWithHardTimeout<T>(fn: () => T, timeoutMs: number): T {
  const slot = sandbox as { __run?: () => T };
  slot.__run = fn;
  try {
    return runScript.runInContext(sandbox, { timeout: timeoutMs, breakOnSigint: false }) as T;
  } finally {
    delete slot.__run;
  }
}

function isHardTimeout(error: unknown): boolean {
  // Created in the sandbox's realm: not an instance of this realm's Error.
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT";
}

// ---- evaluation -------------------------------------------------------------------------------

/** The library's input: maps as `Map`s (see cel-values.ts), `ctx.steps` included, so a step may have any name. */
function contextInput(ctx: CelContext): { ctx: { trigger: CelInput; webhook: CelInput; steps: Map<string, CelInput> } } {
  const steps = new Map<string, CelInput>();
  const source = ctx.steps ?? {};
  for (const name of Object.keys(source)) {
    const output = source[name];
    if (output !== undefined) steps.set(name, toCelInput(output));
  }
  return { ctx: { trigger: toCelInput(ctx.trigger), webhook: toCelInput(ctx.webhook), steps } };
}

function toEvaluationError(error: unknown, compiled: CompiledExpression, budget: EvaluationBudget): CelEvaluationError {
  const hardTimeout = isHardTimeout(error);
  if (hardTimeout) {
    // Terminated mid-way: no `finally` ran inside the evaluation. Reset what it may have left behind.
    clearActiveBudget();
    try {
      reloadProgram(compiled);
    } catch {
      // The source compiled before; if it no longer does, the next evaluation reports it.
    }
  }

  let result: CelEvaluationError;
  if (budget.exceeded) {
    result = budget.exceeded;
  } else if (error instanceof CelEvaluationError) {
    result = error;
  } else if (hardTimeout) {
    result = new CelEvaluationError("TIMEOUT", `evaluation exceeds its time budget of ${budget.timeoutMs} ms`, undefined, { cause: error });
  } else if (error instanceof EvaluationError) {
    const start = error.range?.start;
    const position = typeof start === "number" ? codePointOffset(compiled.source, start) : undefined;
    result = new CelEvaluationError("EVALUATION_ERROR", error.summary || error.message, position, { cause: error });
  } else if (error instanceof RangeError) {
    // Stack overflow on a deeply nested value, or a string or array past the engine's maximum.
    result = new CelEvaluationError("VALUE_TOO_LARGE", `value too large or too deeply nested: ${error.message}`, undefined, { cause: error });
  } else {
    result = new CelEvaluationError("EVALUATION_ERROR", error instanceof Error ? error.message : String(error), undefined, { cause: error });
  }
  result.path ??= compiled.path;
  return result;
}

/**
 * Evaluates `compiled` with `ctx` and returns the CEL value as the library represents it (int as
 * bigint, double as number, timestamp as Date, list as array, map as object or Map...). Use
 * `toJsonValue` (or `evaluateJson`) before storing or serializing it.
 * Throws CelEvaluationError on any failure, including an exhausted cost or time budget.
 */
export function evaluate(compiled: CompiledExpression, ctx: CelContext, limits?: EvaluationLimits): unknown {
  const { maxCost, timeoutMs } = resolveLimits(limits);
  const budget = new EvaluationBudget(maxCost, timeoutMs, compiled.path);
  try {
    const program = programOf(compiled);
    const input = contextInput(ctx);
    const run = () => withBudget(budget, () => program(input));
    // The hard guard starts a watchdog thread per call, dearer than most evaluations: only an
    // expression that can loop needs it; the others stop at the cooperative checks.
    const result: unknown = mayLoop(compiled) ? runWithHardTimeout(run, timeoutMs + HARD_TIMEOUT_GRACE_MS) : run();
    if (budget.exceeded) throw budget.exceeded; // in case the library swallowed it (`error || true`)
    if (result instanceof Promise) throw new CelEvaluationError("EVALUATION_ERROR", "asynchronous evaluation is not supported");
    afterNode(budget, program.ast, result); // the root node is not seen by the per-node hook
    budget.checkSize(result); // a result read from the context (`ctx.steps`) is bounded too
    return result;
  } catch (error) {
    throw toEvaluationError(error, compiled, budget);
  }
}

/** The CEL type name of a runtime value, for messages. */
export function celTypeOf(value: unknown): string {
  switch (typeof value) {
    case "string":
      return "string";
    case "bigint":
      return "int";
    case "number":
      return "double";
    case "boolean":
      return "bool";
    case "object":
      if (value === null) return "null_type";
      if (Array.isArray(value) || value instanceof Set) return "list";
      if (value instanceof Date) return "google.protobuf.Timestamp";
      if (value instanceof Duration) return "google.protobuf.Duration";
      if (value instanceof Uint8Array) return "bytes";
      if (value instanceof UnsignedInt) return "uint";
      if (value instanceof Map) return "map";
      return Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null ? "map" : "object";
    default:
      return typeof value;
  }
}

function wrongType(compiled: CompiledExpression, expected: string, value: unknown): CelEvaluationError {
  const error = new CelEvaluationError("RESULT_TYPE", `expression must evaluate to ${expected}, got ${celTypeOf(value)}`);
  error.path = compiled.path;
  return error;
}

/** For `skipIfTrueCel`: the result must be a bool. */
export function evaluateBoolean(compiled: CompiledExpression, ctx: CelContext, limits?: EvaluationLimits): boolean {
  const value = evaluate(compiled, ctx, limits);
  if (typeof value !== "boolean") throw wrongType(compiled, "a bool", value);
  return value;
}

/** For `userIdCel`, `appIdCel`, `reasonCel`: the result must be a string. */
export function evaluateString(compiled: CompiledExpression, ctx: CelContext, limits?: EvaluationLimits): string {
  const value = evaluate(compiled, ctx, limits);
  if (typeof value !== "string") throw wrongType(compiled, "a string", value);
  return value;
}

/**
 * For `expiresAtCel`: a CEL timestamp or an RFC 3339 string, in years 0001 to 9999 (UTC). Returns the
 * canonical form used by the funds domain: UTC, millisecond precision (`2026-12-01T00:00:00.000Z`).
 */
export function evaluateTimestamp(compiled: CompiledExpression, ctx: CelContext, limits?: EvaluationLimits): string {
  const value = evaluate(compiled, ctx, limits);
  let checked: TimestampCheck;
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw wrongType(compiled, "a valid timestamp", value);
    const year = yearOutOfRange(value);
    checked = year === undefined ? checkTimestamp(value.toISOString()) : { problem: TIMESTAMP_RANGE, year };
  } else if (typeof value === "string") {
    checked = checkTimestamp(value);
  } else {
    throw wrongType(compiled, "a timestamp or an RFC 3339 string", value);
  }
  if ("canonical" in checked) return checked.canonical;
  const failure = new CelEvaluationError(
    "RESULT_TYPE",
    "year" in checked
      ? `expression must evaluate to a timestamp in years 0001 to 9999 (UTC), got year ${checked.year}`
      : `expression must evaluate to a timestamp or an RFC 3339 string, got "${String(value)}"`,
  );
  failure.path = compiled.path;
  throw failure;
}

/** For `evaluateExpressions`: any result, converted to JSON (see cel-values.ts for the mapping). */
export function evaluateJson(compiled: CompiledExpression, ctx: CelContext, limits?: EvaluationLimits): JsonValue {
  const value = evaluate(compiled, ctx, limits);
  try {
    return toJsonValue(value);
  } catch (error) {
    if (error instanceof CelEvaluationError) error.path ??= compiled.path;
    throw error;
  }
}
