// The cost and time budget of one CEL evaluation. The evaluator is synchronous and single-threaded,
// so one budget is active at a time; the hooks installed in cel-environment.ts charge it.
//
// Cost model: every evaluated AST node costs 1; every string, list, bytes or map produced by an
// operator or a function call (`+`, `split`, `join`, `map()` results, list literals...) costs its
// size in addition, and `matches` costs the length of its input. So the budget bounds the time
// spent and, because no value can be built bigger than the budget, the memory allocated too.
import { CelEvaluationError } from "./cel-errors.js";

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
