// Save-time checking of an automation's CEL expressions: parse, static checks, type check. What is
// refused here is a 400 `CEL_INVALID` with the field's path and the 0-based position (in
// characters) of the fault; what passes is a CompiledExpression that cel-evaluate.ts runs. What is
// refused, and what cannot be checked before a run: docs/automations.md, "CEL in steps".
import { ParseError, TypeError as CelTypeError, type ASTNode, type ParseResult } from "@marcbachmann/cel-js";
import { longerThan } from "../core/storable-text.js";
import { celInvalid, codePointOffset } from "./cel-errors.js";
import { celEnvironment, installMapLiterals, PROBE_FUNCTION } from "./cel-environment.js";
import { regexProblem } from "./cel-regex.js";

/** Longest expression accepted, in characters (as the contract's `maxLength`). */
export const MAX_EXPRESSION_LENGTH = 4096;
/** Deepest nesting of comprehensions inside the body of another. */
export const MAX_COMPREHENSION_NESTING = 3;

/** What an expression must evaluate to; checked statically where the type is known. */
export type ExpectedResult = "bool" | "string" | "timestamp" | "any";

export interface CheckOptions {
  /** Names of the steps before the one this expression belongs to. */
  stepNames: readonly string[];
  /** The result type the field requires (default `any`). */
  expect?: ExpectedResult;
}

/** An expression that passed the save-time checks, ready for `evaluate`. */
export interface CompiledExpression {
  readonly source: string;
  /** The field it came from, e.g. `automationSteps[1].skipIfTrueCel`. */
  readonly path: string;
  /** The statically inferred CEL type of the result (`dyn` when it depends on the JSON). */
  readonly resultType: string;
}

const programs = new WeakMap<CompiledExpression, ParseResult>();
/** Expressions with a comprehension: the only ones whose work is not bounded by their size. */
const looping = new WeakSet<CompiledExpression>();

const COMPATIBLE_TYPES: Record<Exclude<ExpectedResult, "any">, readonly string[]> = {
  bool: ["bool", "dyn"],
  string: ["string", "dyn"],
  timestamp: ["google.protobuf.Timestamp", "string", "dyn"],
};

const COMPREHENSION_MACROS = new Set(["all", "exists", "exists_one", "map", "filter"]);
const MIN_INT64 = -9223372036854775808n;
const MAX_INT64 = 9223372036854775807n;

class StaticError extends Error {
  constructor(
    readonly utf16Position: number,
    message: string,
  ) {
    super(message);
  }
}

function libraryErrorPosition(error: unknown): number {
  const range = (error as { range?: { start?: unknown } }).range;
  return typeof range?.start === "number" ? range.start : 0;
}

function libraryErrorText(error: unknown): string {
  const summary = (error as { summary?: unknown }).summary;
  if (typeof summary === "string") return summary;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Checks one expression at save time and compiles it.
 * Throws the 400 `CEL_INVALID` (metadata `path` and `position`, a field violation on `path`).
 */
export function checkExpression(source: string, path: string, options: CheckOptions): CompiledExpression {
  if (typeof source !== "string") throw celInvalid(path, 0, "expression must be a string");
  if (longerThan(source, MAX_EXPRESSION_LENGTH)) {
    throw celInvalid(path, MAX_EXPRESSION_LENGTH, `expression longer than ${MAX_EXPRESSION_LENGTH} characters`);
  }
  const fail = (utf16Position: number, message: string) => celInvalid(path, codePointOffset(source, utf16Position), message);

  let program: ParseResult;
  let resultType: string;
  let loops: boolean;
  try {
    program = celEnvironment.parse(source);
    loops = checkStatically(program.ast, options.stepNames);
    const result = program.check();
    if (!result.valid) {
      const error = result.error;
      throw fail(libraryErrorPosition(error), `type error: ${libraryErrorText(error)}`);
    }
    resultType = result.type ?? "dyn";
    installMapLiterals(program.ast);
  } catch (error) {
    if (error instanceof StaticError) throw fail(error.utf16Position, error.message);
    if (error instanceof ParseError) {
      const kind = error.code === "limit_exceeded" ? "expression too complex" : "syntax error";
      throw fail(libraryErrorPosition(error), `${kind}: ${libraryErrorText(error)}`);
    }
    if (error instanceof CelTypeError) throw fail(libraryErrorPosition(error), `type error: ${libraryErrorText(error)}`);
    throw error;
  }

  const expect = options.expect ?? "any";
  if (expect !== "any" && !COMPATIBLE_TYPES[expect].includes(resultType)) {
    throw celInvalid(path, 0, `expression must evaluate to ${expect === "timestamp" ? "a timestamp or an RFC 3339 string" : `a ${expect}`}, not ${resultType}`);
  }

  const compiled: CompiledExpression = Object.freeze({ source, path, resultType });
  programs.set(compiled, program);
  if (loops) looping.add(compiled);
  return compiled;
}

/**
 * Whether evaluating `compiled` may loop: it has a comprehension (`map`, `filter`, `all`, `exists`,
 * `exists_one`). Without one, CEL evaluates each node once, so the work is bounded by the node count
 * times the size of the values involved (64 KB bodies, budget-bounded step outputs).
 */
export function mayLoop(compiled: CompiledExpression): boolean {
  return looping.has(compiled);
}

/** The library's program of a compiled expression (internal to the CEL module). */
export function programOf(compiled: CompiledExpression): ParseResult {
  const program = programs.get(compiled);
  if (!program) throw new globalThis.TypeError("not a CompiledExpression returned by checkExpression");
  return program;
}

/**
 * Replaces the program of `compiled` by a fresh parse of the same source. Used after an
 * evaluation was terminated by the hard timeout, which may have stopped the library mid-way
 * through a program's internal state.
 */
export function reloadProgram(compiled: CompiledExpression): void {
  const program = celEnvironment.parse(compiled.source);
  const result = program.check();
  if (!result.valid) throw result.error ?? new Error("type check failed");
  installMapLiterals(program.ast);
  programs.set(compiled, program);
}

// ---- static checks ----------------------------------------------------------------------------

function isCtxSteps(node: ASTNode): boolean {
  return node.op === "." && node.args[1] === "steps" && node.args[0].op === "id" && node.args[0].args === "ctx";
}

/** The step name and its position when `node` reads `ctx.steps.<name>` or `ctx.steps["<name>"]`. */
function stepReference(node: ASTNode): { name: string; position: number } | undefined {
  if ((node.op === "." || node.op === ".?") && isCtxSteps(node.args[0])) return { name: node.args[1], position: node.pos };
  if ((node.op === "[]" || node.op === "[?]") && isCtxSteps(node.args[0])) {
    const key = node.args[1];
    if (key.op === "value" && typeof key.args === "string") return { name: key.args, position: key.pos };
  }
  return undefined;
}

/** Walks the parsed (unexpanded) AST and throws a StaticError at the first fault; answers whether it has a comprehension. */
function checkStatically(root: ASTNode, stepNames: readonly string[]): boolean {
  const earlier = new Set(stepNames);
  let comprehensions = false;

  const visit = (node: ASTNode, ctxShadowed: boolean, nesting: number): void => {
    if (!ctxShadowed) {
      const ref = stepReference(node);
      if (ref && !earlier.has(ref.name)) {
        throw new StaticError(ref.position, `ctx.steps.${ref.name}: no earlier step is named "${ref.name}"`);
      }
    }

    switch (node.op) {
      case "value":
        if (typeof node.args === "bigint" && (node.args > MAX_INT64 || node.args < MIN_INT64)) {
          throw new StaticError(node.pos, "integer literal out of range");
        }
        return;
      case "id":
        return;
      case ".":
      case ".?":
        visit(node.args[0], ctxShadowed, nesting);
        return;
      case "-_":
        // -9223372036854775808 parses as the negation of the literal 2^63, which is in range once negated.
        if (node.args.op === "value" && node.args.args === -MIN_INT64) return;
        visit(node.args, ctxShadowed, nesting);
        return;
      case "!_":
        visit(node.args, ctxShadowed, nesting);
        return;
      case "call": {
        const [name, args] = node.args;
        if (name === PROBE_FUNCTION) throw new StaticError(node.pos, `found no matching overload for '${name}()'`);
        for (const arg of args) visit(arg, ctxShadowed, nesting);
        return;
      }
      case "rcall": {
        const [name, receiver, args] = node.args;
        visit(receiver, ctxShadowed, nesting);
        const first = args[0];
        if (COMPREHENSION_MACROS.has(name) && first?.op === "id" && args.length >= 2) {
          if (nesting + 1 > MAX_COMPREHENSION_NESTING) {
            throw new StaticError(node.pos, `comprehensions nested deeper than ${MAX_COMPREHENSION_NESTING}`);
          }
          comprehensions = true;
          const shadowed = ctxShadowed || first.args === "ctx";
          for (const arg of args.slice(1)) visit(arg, shadowed, nesting + 1);
          return;
        }
        if (name === "bind" && receiver.op === "id" && receiver.args === "cel" && first?.op === "id" && args.length === 3) {
          const [, value, body] = args;
          if (value) visit(value, ctxShadowed, nesting);
          if (body) visit(body, ctxShadowed || first.args === "ctx", nesting);
          return;
        }
        if (name === "matches" && first?.op === "value" && typeof first.args === "string") {
          const problem = regexProblem(first.args);
          if (problem) throw new StaticError(first.pos, problem);
        }
        for (const arg of args) visit(arg, ctxShadowed, nesting);
        return;
      }
      case "list":
        for (const item of node.args) visit(item, ctxShadowed, nesting);
        return;
      case "map":
        for (const [key, value] of node.args) {
          visit(key, ctxShadowed, nesting);
          visit(value, ctxShadowed, nesting);
        }
        return;
      default:
        // Binary operators, `[]`, `[?]`, `?:`, `&&`, `||`: arrays of operands.
        for (const operand of node.args as readonly ASTNode[]) visit(operand, ctxShadowed, nesting);
    }
  };
  visit(root, false, 0);
  return comprehensions;
}
