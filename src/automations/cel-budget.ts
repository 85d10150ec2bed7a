// The cost, time and size budget of one CEL evaluation, charged by the hooks of cel-environment.ts
// (the evaluator is synchronous, so one budget is active at a time). Every evaluated node costs 1,
// and every string, list, bytes or map an operator or function produces its size, so the budget
// bounds the time spent and the values built; since a list's cost counts its items, not what they
// weigh, every value is also held to MAX_VALUE_BYTES as JSON as it is built (resource-budget.ts).
// docs/automations.md, "CEL in steps".
import { CelEvaluationError } from "./cel-errors.js";
import { jsonSize } from "./json-size.js";
import { MAX_VALUE_BYTES, valueTooLarge } from "./resource-budget.js";

/** How often (in charged steps) the wall clock is read. */
const CLOCK_CHECK_INTERVAL = 64;

export class EvaluationBudget {
  private cost = 0;
  private ticks = 0;
  private readonly deadline: number;
  /** Sticky: once exceeded, every further charge throws again, so the library cannot swallow it. */
  exceeded: CelEvaluationError | undefined;

  constructor(
    readonly maxCost: number,
    readonly timeoutMs: number,
    /** The field of the expression, for messages. */
    private readonly path: string,
  ) {
    this.deadline = performance.now() + timeoutMs;
  }

  get spent(): number {
    return this.cost;
  }

  /** Charges `units` and throws when the cost or the time budget is exceeded. */
  charge(units: number): void {
    if (this.exceeded) throw this.exceeded;
    this.cost += units;
    if (this.cost > this.maxCost) {
      this.fail(new CelEvaluationError("COST_EXCEEDED", `evaluation cost exceeds the budget of ${this.maxCost}`));
    }
    this.ticks += 1;
    if (this.ticks >= CLOCK_CHECK_INTERVAL || units > CLOCK_CHECK_INTERVAL) {
      this.ticks = 0;
      this.checkClock();
    }
  }

  checkClock(): void {
    if (this.exceeded) throw this.exceeded;
    if (performance.now() > this.deadline) {
      this.fail(new CelEvaluationError("TIMEOUT", `evaluation exceeds its time budget of ${this.timeoutMs} ms`));
    }
  }

  /** Refuses a built value (string, list, map...) larger than MAX_VALUE_BYTES as JSON. */
  checkSize(value: unknown): void {
    if (this.exceeded) throw this.exceeded;
    if (typeof value !== "string" && (typeof value !== "object" || value === null)) return;
    if (jsonSize(value, MAX_VALUE_BYTES) > MAX_VALUE_BYTES) this.fail(valueTooLarge(this.path));
  }

  /** Refuses, before it is built, a value that will take at least `bytes` bytes as JSON when that is over MAX_VALUE_BYTES. */
  checkPlannedSize(bytes: number): void {
    if (this.exceeded) throw this.exceeded;
    if (bytes > MAX_VALUE_BYTES) this.fail(valueTooLarge(this.path));
  }

  fail(error: CelEvaluationError): never {
    this.exceeded ??= error;
    throw this.exceeded;
  }
}

let active: EvaluationBudget | undefined;

/** The budget of the evaluation running now, if any. */
export function activeBudget(): EvaluationBudget | undefined {
  return active;
}

/** Runs `fn` with `budget` active. Not re-entrant: evaluations never nest. */
export function withBudget<T>(budget: EvaluationBudget, fn: () => T): T {
  const previous = active;
  active = budget;
  try {
    return fn();
  } finally {
    active = previous;
  }
}

/**
 * Forgets the active budget. Needed after the hard timeout: V8 terminates the evaluation without
 * running its `finally` blocks, so `withBudget` cannot restore the previous value itself.
 */
export function clearActiveBudget(): void {
  active = undefined;
}
