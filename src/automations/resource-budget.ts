// The resource budget of automations: bounds on the size, as JSON, of what their steps build and
// store, enforced while values are built (cel-environment.ts, through the evaluation budget) and as
// outputs are added (runner.ts, step-check.ts), never after the fact. The CEL cost budget bounds the
// work of an evaluation; these bound what it can make: with a 64 KB payload, no expression can have
// the server hold more than a small multiple of MAX_VALUE_BYTES, nor store more than
// MAX_EXECUTION_OUTPUT_BYTES of outputs for one execution. The contract and docs/senders.md state them.
import { CelEvaluationError } from "./cel-errors.js";
import { jsonSize, jsonStringSize } from "./json-size.js";

/** Every value an expression builds (string, list, map) and its result: at most this many bytes as JSON. */
export const MAX_VALUE_BYTES = 256 * 1024;
/** A step's output (for `evaluateExpressions`, the object of its named values): at most this many bytes as JSON. */
export const MAX_STEP_OUTPUT_BYTES = 256 * 1024;
/** The outputs of all the steps of one execution together: at most this many bytes as JSON. */
export const MAX_EXECUTION_OUTPUT_BYTES = 1024 * 1024;
/**
 * The longest step results (all steps' names, states, outputs and errors, as stored) an execution
 * can have within the bounds: the outputs plus room for the rest. Longer ones were stored before
 * the bounds existed; executions are answered without them (executions.ts).
 */
export const MAX_STORED_STEP_RESULTS_CHARS = MAX_EXECUTION_OUTPUT_BYTES + 64 * 1024;

/** The error of an expression that builds a value over MAX_VALUE_BYTES. */
export function valueTooLarge(path: string): CelEvaluationError {
  return new CelEvaluationError("VALUE_TOO_LARGE", `${path}: builds a value larger than ${MAX_VALUE_BYTES} bytes as JSON (the bound on every value an expression builds)`);
}

/**
 * The outputs of one execution's steps, counted against MAX_STEP_OUTPUT_BYTES and
 * MAX_EXECUTION_OUTPUT_BYTES entry by entry as a run adds them, so that an output over a bound is
 * refused before the next value is even evaluated.
 */
export class OutputBudget {
  private total = 0;
  private step: { name: string; bytes: number; entries: number } | undefined;

  /** Counts the output of a step that ran before (a run resumed after a crash). */
  counted(output: unknown): void {
    if (output !== null && output !== undefined) this.total += jsonSize(output, MAX_EXECUTION_OUTPUT_BYTES);
  }

  /** Starts the output of step `stepName`: an object whose members `add` counts. */
  begin(stepName: string): void {
    this.step = { name: stepName, bytes: 2, entries: 0 };
  }

  /** Counts the member `key` of the current step's output. Throws a CelEvaluationError past a bound. */
  add(key: string, value: unknown): void {
    const step = this.step;
    if (step === undefined) throw new Error("OutputBudget.add before begin");
    step.bytes += (step.entries++ > 0 ? 1 : 0) + jsonStringSize(key) + 1 + jsonSize(value, MAX_STEP_OUTPUT_BYTES);
    if (step.bytes > MAX_STEP_OUTPUT_BYTES) {
      throw new CelEvaluationError("VALUE_TOO_LARGE", `step "${step.name}": output larger than ${MAX_STEP_OUTPUT_BYTES} bytes as JSON (the bound on a step's output)`);
    }
    if (this.total + step.bytes > MAX_EXECUTION_OUTPUT_BYTES) {
      throw new CelEvaluationError(
        "VALUE_TOO_LARGE",
        `step "${step.name}": the outputs of the execution's steps would be larger than ${MAX_EXECUTION_OUTPUT_BYTES} bytes as JSON together (the bound on an execution's outputs)`,
      );
    }
  }

  /** Counts a whole output (a limit step's answer) as the output of `stepName`. */
  addOutput(stepName: string, output: Readonly<Record<string, unknown>>): void {
    this.begin(stepName);
    for (const key of Object.keys(output)) this.add(key, output[key]);
    this.end();
  }

  /** Ends the current step: its output is stored, and counts toward the execution's total. */
  end(): void {
    if (this.step) this.total += this.step.bytes;
    this.step = undefined;
  }
}
