// The one CEL environment of automations (@marcbachmann/cel-js, pinned to an exact version because
// the guards here reach into it) and the guards that make evaluation safe against hostile input:
// parse-time limits, every evaluated node charged to the budget and held to the size bound, int
// results held to int64, `matches` on RE2, `join` and `duration` bounded, map literals as `Map`s.
// The library does not expose its evaluator: a probe function, evaluated once at start-up, captures
// it. docs/automations.md, "CEL in steps".
import { Environment, EvaluationError, type ASTNode } from "@marcbachmann/cel-js";
import { longerThan } from "../core/storable-text.js";
import { activeBudget, type EvaluationBudget } from "./cel-budget.js";
import { re2Matches } from "./cel-regex.js";

/** CEL type of the `ctx` variable. */
export const CONTEXT_TYPE = "automation.Context";
/** Name of the internal probe function; expressions may not call it. */
export const PROBE_FUNCTION = "__automationCelProbe";

/** Structural limits applied when an expression is parsed (at save time). */
export const PARSE_LIMITS = {
  maxAstNodes: 1000,
  maxDepth: 32,
  maxListElements: 256,
  maxMapEntries: 256,
  maxCallArguments: 16,
} as const;

const MAX_INT64 = 9223372036854775807n;
const MIN_INT64 = -9223372036854775808n;
const MAX_DURATION_STRING = 64;

export const celEnvironment = new Environment({
  unlistedVariablesAreDyn: false,
  // `{"a": 1, "b": "x"}` and `[1, "a"]` are accepted (as map<string, dyn> and list<dyn>), as in cel-go.
  homogeneousAggregateLiterals: false,
  // `ctx.trigger.?field.orValue("default")` reads optional fields.
  enableOptionalTypes: true,
  limits: PARSE_LIMITS,
})
  .registerType(CONTEXT_TYPE, { fields: { trigger: "dyn", webhook: "dyn", steps: "map<string, dyn>" } })
  .registerVariable("ctx", CONTEXT_TYPE, { description: "trigger: the webhook's JSON body or the fund event; webhook: the delivery's eventId and eventType (null for a fund event); steps: outputs of earlier steps" });

// ---- capture the evaluator --------------------------------------------------------------------

interface RunFn {
  (ast: ASTNode, ctx: unknown): unknown;
}
interface FunctionDeclarationLike {
  handler: (this: unknown, ...args: unknown[]) => unknown;
}
interface EvaluatorLike {
  run: RunFn;
  /** Evaluates and returns a thrown error as the value (for CEL's commutative `||`, `&&` and quantifiers). */
  tryEval: RunFn;
  registry: {
    functionCandidates(receiver: boolean, name: string, argCount: number): { declarations: FunctionDeclarationLike[] };
  };
}

let captured: EvaluatorLike | undefined;
celEnvironment.registerFunction(`${PROBE_FUNCTION}(): bool`, function (this: unknown) {
  captured ??= this as EvaluatorLike;
  return true;
});
celEnvironment.evaluate(`${PROBE_FUNCTION}()`, {});
if (!captured || typeof captured.run !== "function" || typeof captured.tryEval !== "function" || typeof captured.registry?.functionCandidates !== "function") {
  throw new Error("cel: cannot install the evaluation guards (unexpected @marcbachmann/cel-js internals)");
}
const evaluator: EvaluatorLike = captured;

// ---- per-node charging ------------------------------------------------------------------------

/** Operators whose result is a newly built value, charged by size. */
const PRODUCING_OPS = new Set(["+", "call", "rcall", "list"]);
/**
 * Operators whose result may be a value built by the expression rather than read from the context,
 * held to the size bound: `accuPush` is a comprehension (`map`, `filter`) appending to its result,
 * measured item by item as it grows.
 */
const BUILDING_OPS = new Set([...PRODUCING_OPS, "map", "accuPush"]);

function sizeOf(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value) || value instanceof Uint8Array) return value.length;
  if (value instanceof Map || value instanceof Set) return value.size;
  return 0;
}

/** Checks and charges the value an AST node produced. Exported for the root node, which `run` does not see. */
export function afterNode(budget: EvaluationBudget, ast: ASTNode, result: unknown): void {
  // Literals are checked at save time (and `-9223372036854775808` is the literal 2^63 negated).
  if (typeof result === "bigint" && ast.op !== "value" && (result > MAX_INT64 || result < MIN_INT64)) {
    throw new EvaluationError("integer overflow", ast);
  }
  if (PRODUCING_OPS.has(ast.op)) {
    const meta = (ast as unknown as { meta?: { alternate?: unknown; macro?: unknown } }).meta;
    // Macros (map, filter, cel.bind...) are charged per iteration already.
    if (!meta?.alternate && !meta?.macro) {
      const size = sizeOf(result);
      if (size > 0) budget.charge(size);
    }
  }
  if (BUILDING_OPS.has(ast.op)) budget.checkSize(result);
}

const originalRun = evaluator.run;
evaluator.run = function guardedRun(this: unknown, ast: ASTNode, ctx: unknown): unknown {
  const budget = activeBudget();
  // Every evaluation goes through cel-evaluate.ts, which sets a budget: never run unguarded.
  if (budget === undefined) throw new Error("cel: evaluation without a budget (use evaluate() from cel.ts)");
  budget.charge(1);
  const result = originalRun.call(this, ast, ctx);
  afterNode(budget, ast, result);
  return result;
};

// `error || true` is true in CEL, so the library evaluates operands of `||`, `&&` and quantifiers
// catching errors. An exhausted budget must not be caught: it would let a quantifier go on
// through all its remaining items (each failing at once, but each a thrown exception).
const originalTryEval = evaluator.tryEval;
evaluator.tryEval = function guardedTryEval(this: unknown, ast: ASTNode, ctx: unknown): unknown {
  const budget = activeBudget();
  if (budget?.exceeded) throw budget.exceeded;
  const result = originalTryEval.call(this, ast, ctx);
  if (budget?.exceeded) throw budget.exceeded;
  return result;
};

// ---- guarded built-in functions ---------------------------------------------------------------

/**
 * Replaces the handler of a built-in in this environment's overload table. Declarations are
 * frozen and shared with the library's default environment, so each is replaced by a copy (same
 * prototype and fields, guarded handler) in this environment's own candidates list only.
 */
function replaceHandler(
  receiver: boolean,
  name: string,
  argCount: number,
  guarded: (original: FunctionDeclarationLike["handler"]) => FunctionDeclarationLike["handler"],
): void {
  const declarations = evaluator.registry.functionCandidates(receiver, name, argCount).declarations;
  if (declarations.length === 0) throw new Error(`cel: no built-in ${name}/${argCount} to guard`);
  declarations.forEach((declaration, index) => {
    const copy = Object.create(Object.getPrototypeOf(declaration) as object | null) as FunctionDeclarationLike;
    Object.assign(copy, declaration, { handler: guarded(declaration.handler) });
    declarations[index] = Object.freeze(copy);
  });
}

replaceHandler(true, "matches", 1, () => (input, pattern) => {
  if (typeof input !== "string" || typeof pattern !== "string") throw new EvaluationError("matches() requires strings");
  activeBudget()?.charge(input.length + pattern.length);
  try {
    return re2Matches(input, pattern);
  } catch (error) {
    throw new EvaluationError(error instanceof Error ? error.message : "invalid regular expression");
  }
});

for (const argCount of [0, 1]) {
  replaceHandler(true, "join", argCount, (original) =>
    function (this: unknown, ...args: unknown[]) {
      const [list, separator] = args;
      if (Array.isArray(list)) {
        let total = typeof separator === "string" ? separator.length * Math.max(0, list.length - 1) : 0;
        for (const item of list) total += typeof item === "string" ? item.length : 0;
        // Before the string is built. A character is at least one byte, plus the quotes, as JSON.
        activeBudget()?.checkPlannedSize(total + 2);
        activeBudget()?.charge(total);
      }
      return original.apply(this, args);
    },
  );
}

replaceHandler(false, "duration", 1, (original) =>
  function (this: unknown, ...args: unknown[]) {
    const [text] = args;
    if (typeof text === "string" && longerThan(text, MAX_DURATION_STRING)) {
      throw new EvaluationError(`duration() string longer than ${MAX_DURATION_STRING} characters`);
    }
    return original.apply(this, args);
  },
);

// ---- map literals -----------------------------------------------------------------------------

interface MutableNode {
  setMeta(key: "evaluate", value: (ev: EvaluatorLike, ast: ASTNode, ctx: unknown) => unknown): unknown;
}

/**
 * A map literal's value. With a string key it is a `Map`, so that every key is kept and reads as
 * data (as JSON objects do, see cel-values.ts). With none (int, uint, bool keys) it is the
 * library's plain object, keys as property names (none of them special), whose lookups unify
 * numbers (`{1: "a"}[1u]`).
 */
function evaluateMapLiteral(ev: EvaluatorLike, ast: ASTNode, ctx: unknown): unknown {
  const entries = (ast.args as ReadonlyArray<readonly [ASTNode, ASTNode]>).map(([key, value]): [unknown, unknown] => [ev.run(key, ctx), ev.run(value, ctx)]);
  if (entries.some(([key]) => typeof key === "string")) return new Map(entries);
  const object: Record<string, unknown> = {};
  for (const [key, value] of entries) object[String(key)] = value;
  return object;
}

/** The nodes under a parsed node (macros are expanded from these same nodes). */
function childNodes(node: ASTNode): readonly ASTNode[] {
  switch (node.op) {
    case "value":
    case "id":
      return [];
    case ".":
    case ".?":
      return [node.args[0]];
    case "!_":
    case "-_":
      return [node.args];
    case "call":
      return node.args[1];
    case "rcall":
      return [node.args[1], ...node.args[2]];
    case "map":
      return node.args.flat();
    default:
      // `list`, binary operators, `[]`, `[?]`, `?:`, `&&`, `||`: arrays of operands.
      return node.args as readonly ASTNode[];
  }
}

/** Makes the non-empty map literals of a parsed program evaluate with `evaluateMapLiteral`. */
export function installMapLiterals(root: ASTNode): void {
  const pending: ASTNode[] = [root];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (node.op === "map" && node.args.length > 0) (node as unknown as MutableNode).setMeta("evaluate", evaluateMapLiteral);
    pending.push(...childNodes(node));
  }
}
