// How values cross between JSON and CEL: the context (`ctx.trigger`, the event's JSON body, and
// `ctx.steps.<name>`, earlier steps' JSON outputs, read through `toJsonValue` so that an output in
// memory reads as it will from storage) into CEL, with every JSON number a `double` and every
// object a `Map`; and results back to JSON (`toJsonValue`), with no BigInt, NaN or recursion left
// for JSON.stringify. Both iterative and bounded. The mapping and why: docs/automations.md, "CEL in
// steps".
import { Duration, UnsignedInt } from "@marcbachmann/cel-js/evaluator";
import { Optional } from "@marcbachmann/cel-js";
import { CelEvaluationError } from "./cel-errors.js";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The most values (scalars and containers) one conversion visits. */
export const MAX_JSON_NODES = 1_000_000;
/** The deepest nesting of a converted result. */
export const MAX_JSON_DEPTH = 512;

export interface JsonLimits {
  /** Default MAX_JSON_NODES. */
  maxNodes?: number;
  /** Default MAX_JSON_DEPTH. */
  maxDepth?: number;
}

type Container = JsonValue[] | { [key: string]: JsonValue };

/** Assigns an own property, even for the key `__proto__` (which JSON.parse also makes an own property). */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function typeName(value: object): string | undefined {
  // The library's `Type` (the value of `type(x)`) is not exported; it tags itself `Type<name>`.
  const tag = /^\[object Type<(.+)>\]$/.exec(Object.prototype.toString.call(value));
  return tag?.[1];
}

function bigintToJson(value: bigint): number | string {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(value) : value.toString();
}

function mapKey(key: unknown): string {
  if (typeof key === "string") return key;
  if (typeof key === "bigint" || typeof key === "boolean" || typeof key === "number") return String(key);
  if (key instanceof UnsignedInt) return key.value.toString();
  throw new CelEvaluationError("RESULT_TYPE", `a map key of type ${typeof key} cannot be converted to JSON`);
}

/**
 * Converts a CEL value (or any JSON-like JS value) into a JSON value that JSON.stringify accepts.
 * Throws CelEvaluationError when it meets a value with no JSON form, or past the limits.
 */
export function toJsonValue(value: unknown, limits: JsonLimits = {}): JsonValue {
  const maxNodes = limits.maxNodes ?? MAX_JSON_NODES;
  const maxDepth = limits.maxDepth ?? MAX_JSON_DEPTH;
  const root: { [key: string]: JsonValue } = { value: null };
  // [value, parent container, key in the parent, depth of the value]
  const stack: Array<[unknown, Container, string | number, number]> = [[value, root, "value", 0]];
  let nodes = 0;

  const assign = (parent: Container, key: string | number, v: JsonValue): void => {
    if (Array.isArray(parent)) parent[key as number] = v;
    else setOwn(parent, key as string, v);
  };

  for (let task = stack.pop(); task !== undefined; task = stack.pop()) {
    const [v, parent, key, depth] = task;
    if (++nodes > maxNodes) throw new CelEvaluationError("VALUE_TOO_LARGE", `value has more than ${maxNodes} elements`);

    switch (typeof v) {
      case "string":
      case "boolean":
        assign(parent, key, v);
        continue;
      case "undefined":
        assign(parent, key, null);
        continue;
      case "number":
        if (Number.isFinite(v)) assign(parent, key, Object.is(v, -0) ? 0 : v);
        else assign(parent, key, Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
        continue;
      case "bigint":
        assign(parent, key, bigintToJson(v));
        continue;
      case "object":
        break;
      default:
        throw new CelEvaluationError("RESULT_TYPE", `a value of type ${typeof v} cannot be converted to JSON`);
    }

    if (v === null) {
      assign(parent, key, null);
      continue;
    }
    if (depth >= maxDepth && (Array.isArray(v) || v instanceof Set || v instanceof Map || isPlainObject(v))) {
      throw new CelEvaluationError("VALUE_TOO_LARGE", `value nested deeper than ${maxDepth} levels`);
    }
    if (Array.isArray(v) || v instanceof Set) {
      const items: unknown[] = Array.isArray(v) ? v : [...(v as Set<unknown>)];
      const out: JsonValue[] = new Array<JsonValue>(items.length).fill(null);
      assign(parent, key, out);
      for (let i = items.length - 1; i >= 0; i--) stack.push([items[i], out, i, depth + 1]);
    } else if (v instanceof Map) {
      // Also the library's wrapper of typed messages (`ctx` itself), a Map subclass that fills on iteration.
      const out: { [key: string]: JsonValue } = {};
      assign(parent, key, out);
      for (const [k, item] of v as Map<unknown, unknown>) {
        if (item === undefined) continue;
        const name = mapKey(k);
        setOwn(out, name, null); // keeps the key order; the value is filled in below
        stack.push([item, out, name, depth + 1]);
      }
    } else if (v instanceof Date) {
      if (Number.isNaN(v.getTime())) throw new CelEvaluationError("RESULT_TYPE", "an invalid timestamp cannot be converted to JSON");
      assign(parent, key, v.toISOString());
    } else if (v instanceof UnsignedInt) {
      assign(parent, key, bigintToJson(v.value));
    } else if (v instanceof Duration) {
      assign(parent, key, v.toString());
    } else if (v instanceof Uint8Array) {
      assign(parent, key, Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64"));
    } else if (v instanceof Optional) {
      if (v.hasValue()) stack.push([v.value(), parent, key, depth]);
      else assign(parent, key, null);
    } else if (isPlainObject(v)) {
      const out: { [key: string]: JsonValue } = {};
      assign(parent, key, out);
      const record = v as Record<string, unknown>;
      for (const name of Object.keys(record)) {
        const item = record[name];
        if (item === undefined) continue; // as JSON.stringify does
        setOwn(out, name, null);
        stack.push([item, out, name, depth + 1]);
      }
    } else {
      const name = typeName(v);
      if (name === undefined) {
        throw new CelEvaluationError("RESULT_TYPE", `a value of type ${v.constructor?.name ?? "object"} cannot be converted to JSON`);
      }
      assign(parent, key, name);
    }
  }
  return root["value"] ?? null;
}

/** A JSON value as CEL reads it: objects are `Map`s, whatever their keys. */
export type CelInput = null | boolean | number | string | CelInput[] | Map<string, CelInput>;

/** The CEL form of a JSON value (iterative, as `toJsonValue`). */
function jsonToCel(value: JsonValue): CelInput {
  const pending: Array<[Container, CelInput[] | Map<string, CelInput>]> = [];
  const convert = (v: JsonValue): CelInput => {
    if (v === null || typeof v !== "object") return v;
    const out = Array.isArray(v) ? [] : new Map<string, CelInput>();
    pending.push([v, out]);
    return out;
  };
  const root = convert(value);
  for (let task = pending.pop(); task !== undefined; task = pending.pop()) {
    const [source, out] = task;
    if (Array.isArray(source)) for (const item of source) (out as CelInput[]).push(convert(item));
    else for (const key of Object.keys(source)) (out as Map<string, CelInput>).set(key, convert(source[key] ?? null));
  }
  return root;
}

const inputCache = new WeakMap<object, CelInput>();

/**
 * The CEL view of one context value (`ctx.trigger`, or one step's output): its JSON form, as
 * `toJsonValue` gives it, with objects as `Map`s. Conversions of objects are cached by identity, so
 * a trigger read by many expressions is converted once; context values must therefore not be
 * mutated afterwards.
 */
export function toCelInput(value: unknown): CelInput {
  const limits = { maxNodes: MAX_JSON_NODES, maxDepth: Number.POSITIVE_INFINITY };
  if (value === null || typeof value !== "object") return jsonToCel(toJsonValue(value, limits));
  const hit = inputCache.get(value);
  if (hit !== undefined) return hit;
  const converted = jsonToCel(toJsonValue(value, limits));
  inputCache.set(value, converted);
  return converted;
}
