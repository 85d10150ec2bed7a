// The size a CEL value would have as JSON text, in UTF-8 bytes, as `toJsonValue` (cel-values.ts)
// and JSON.stringify would write it, measured without writing it and without recursion. A value can
// be far larger as JSON than in memory (a list of 16,000 references to one 32 KB string is 512 MB),
// so the bounds on what automations store are bounds on this size, measured as values are built
// (resource-budget.ts); containers measured are remembered, and a measure stops once past its
// limit.
import { Optional } from "@marcbachmann/cel-js";
import { Duration, UnsignedInt } from "@marcbachmann/cel-js/evaluator";

/**
 * Sizes of the containers measured so far. A list is measured again only past the length it had:
 * CEL lists never change, except a comprehension's accumulator, which only grows at its end.
 */
const measured = new WeakMap<object, { bytes: number; length: number }>();
/**
 * A container is remembered when measuring it visited at least this many members (its own and
 * those of the containers in it that were not remembered): measuring a smaller one again costs
 * less than remembering each of many (a comprehension making a small map per item).
 */
const REMEMBER_AFTER_VISITS = 32;

/** Characters JSON escapes (controls, `"`, `\`) and surrogates (a lone one is written `\udxxx`). */
const NEEDS_CARE = /[\u0000-\u001f"\\\ud800-\udfff]/;
/** Controls with a two-character escape: \b \t \n \f \r. */
const SHORT_ESCAPES = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

/** A string's size as JSON, quotes included. */
export function jsonStringSize(text: string): number {
  // Long strings: native scans (most need no escape); short ones: the loop is cheaper than the calls.
  if (text.length > 64 && !NEEDS_CARE.test(text)) return Buffer.byteLength(text, "utf8") + 2;
  let bytes = 2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20) bytes += SHORT_ESCAPES.has(c) ? 2 : 6;
    else if (c === 0x22 || c === 0x5c) bytes += 2;
    else if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c < 0xd800 || c > 0xdfff) bytes += 3;
    else if (c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 6;
  }
  return bytes;
}

/** Digits (and sign) of a safe integer, without making its string; -0 is written 0. */
function integerSize(value: number): number {
  let bytes = value < 0 ? 2 : 1;
  for (let rest = Math.abs(value); rest >= 10; rest = Math.floor(rest / 10)) bytes++;
  return bytes;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);

function bigintSize(value: bigint): number {
  if (value <= MAX_SAFE && value >= MIN_SAFE) return integerSize(Number(value));
  return value.toString().length + 2; // outside the safe integers, toJsonValue writes a decimal string
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const unwrapOptional = (value: unknown): unknown => {
  let v = value;
  while (v instanceof Optional) v = v.hasValue() ? v.value() : null;
  return v;
};

/** The size of a value that is not a container; undefined for a list or a map. */
function leafSize(value: unknown): number | undefined {
  switch (typeof value) {
    case "string":
      return jsonStringSize(value);
    case "boolean":
      return value ? 4 : 5;
    case "number":
      if (Number.isSafeInteger(value)) return integerSize(value);
      if (Number.isFinite(value)) return String(value).length;
      return Number.isNaN(value) ? 5 : value > 0 ? 10 : 11; // "NaN", "Infinity", "-Infinity"
    case "bigint":
      return bigintSize(value);
    case "undefined":
      return 4;
    case "object":
      break;
    default:
      return 0; // no JSON form: toJsonValue refuses it
  }
  if (value === null) return 4;
  if (Array.isArray(value) || value instanceof Set || value instanceof Map || isPlainObject(value)) return undefined;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 0 : value.toISOString().length + 2;
  if (value instanceof UnsignedInt) return bigintSize(value.value);
  if (value instanceof Duration) return value.toString().length + 2;
  if (value instanceof Uint8Array) return 4 * Math.ceil(value.byteLength / 3) + 2; // base64
  // A CEL type, written as its name: its tag `[object Type<name>]` is a little longer.
  return Object.prototype.toString.call(value).length;
}

function keyText(key: unknown): string {
  if (key instanceof UnsignedInt) return key.value.toString();
  return String(key);
}

/** The container measured last, remembered or not: a comprehension appends the value it just built. */
const last: { value: object | undefined; bytes: number; length: number } = { value: undefined, bytes: 0, length: 0 };

/** Records a container's size: always the last one, and in `measured` when worth it or already there. */
function note(value: object, bytes: number, length: number, visits: number): void {
  last.value = value;
  last.bytes = bytes;
  last.length = length;
  const known = measured.get(value);
  if (known !== undefined) {
    known.bytes = bytes;
    known.length = length;
  } else if (visits >= REMEMBER_AFTER_VISITS) {
    measured.set(value, { bytes, length });
  }
}

/** A container's size if it is known (for a list, at its current length). */
function knownSize(value: object): number | undefined {
  if (value === last.value && (!Array.isArray(value) || value.length === last.length)) return last.bytes;
  const known = measured.get(value);
  if (known === undefined || (Array.isArray(value) && value.length !== known.length)) return undefined;
  return known.bytes;
}

/** A member's size when it is a leaf or a known container; undefined when it must be measured. */
const memberSize = (item: unknown): number | undefined => leafSize(item) ?? knownSize(item as object);

/**
 * The size of a list or plain map whose new members are all leaves or known containers (most values
 * a node builds: a literal, a concatenation, an accumulator given one more item), without the walk's
 * frames; undefined when a member must be walked.
 */
function shallowSize(value: object, limit: number): number | undefined {
  let bytes = 2;
  let written = 0;
  if (Array.isArray(value)) {
    const known = measured.get(value);
    // An accumulator that grew: only its new items are measured.
    if (known !== undefined && known.length < value.length) {
      bytes = known.bytes;
      written = known.length;
    }
    for (; written < value.length; ) {
      const size = memberSize(unwrapOptional(value[written]));
      if (size === undefined) return undefined;
      bytes += (written++ > 0 ? 1 : 0) + size;
      if (bytes > limit) return bytes;
    }
  } else if (isPlainObject(value)) {
    for (const key of Object.keys(value)) {
      const item = unwrapOptional((value as Record<string, unknown>)[key]);
      if (item === undefined) continue; // left out, as JSON.stringify does
      const size = memberSize(item);
      if (size === undefined) return undefined;
      bytes += (written++ > 0 ? 1 : 0) + jsonStringSize(key) + 1 + size;
      if (bytes > limit) return bytes;
    }
  } else {
    return undefined;
  }
  note(value, bytes, Array.isArray(value) ? value.length : written, written);
  return bytes;
}

/** One container being walked. */
interface Frame {
  owner: object;
  /** A list's items, or a map's values (in the order of `keys`). */
  items: readonly unknown[];
  /** A map's keys as JSON writes them; undefined for a list. */
  keys: readonly string[] | undefined;
  index: number;
  /** Members written so far (a map leaves out undefined values, as JSON.stringify does). */
  written: number;
  bytes: number;
  /** Members visited, its own and those of the members walked. */
  visits: number;
}

function frameOf(value: object): Frame {
  if (Array.isArray(value)) {
    const known = measured.get(value);
    if (known !== undefined && known.length < value.length) {
      return { owner: value, items: value, keys: undefined, index: known.length, written: known.length, bytes: known.bytes, visits: 0 };
    }
    return { owner: value, items: value, keys: undefined, index: 0, written: 0, bytes: 2, visits: 0 };
  }
  if (value instanceof Set) return { owner: value, items: [...(value as Set<unknown>)], keys: undefined, index: 0, written: 0, bytes: 2, visits: 0 };
  let keys: string[];
  let items: unknown[];
  if (value instanceof Map) {
    keys = [];
    items = [];
    for (const [key, item] of value as Map<unknown, unknown>) {
      keys.push(keyText(key));
      items.push(item);
    }
  } else {
    keys = Object.keys(value);
    items = keys.map((key) => (value as Record<string, unknown>)[key]);
  }
  return { owner: value, items, keys, index: 0, written: 0, bytes: 2, visits: 0 };
}

/** The walk's stack, kept between measures (a measure never starts another). */
const stack: Frame[] = [];

/** Walks a container that holds containers not measured yet, iteratively (values may nest deeply). */
function walk(root: object, limit: number): number {
  stack.push(frameOf(root));
  // The bytes counted in every open frame: what the measure has seen so far.
  let seen = stack[0]!.bytes;
  while (seen <= limit) {
    const frame = stack[stack.length - 1]!;
    if (frame.index === frame.items.length) {
      stack.pop();
      note(frame.owner, frame.bytes, frame.items.length, frame.visits);
      const parent = stack[stack.length - 1];
      if (parent === undefined) return frame.bytes;
      parent.bytes += frame.bytes;
      parent.visits += frame.visits;
      continue;
    }
    const i = frame.index++;
    const item = unwrapOptional(frame.items[i]);
    if (item === undefined && frame.keys !== undefined) continue;
    frame.visits++;
    const size = memberSize(item);
    const key = frame.keys?.[i];
    const add = (frame.written++ > 0 ? 1 : 0) + (key === undefined ? 0 : jsonStringSize(key) + 1) + (size ?? 0);
    frame.bytes += add;
    seen += add;
    if (size === undefined) {
      const child = frameOf(item as object);
      stack.push(child);
      seen += child.bytes;
    }
  }
  stack.length = 0;
  return seen;
}

/**
 * The size of `value` as JSON text in UTF-8 bytes, or, once the measure passes `limit`, some number
 * above `limit` (the measure stops there).
 */
export function jsonSize(value: unknown, limit: number): number {
  const root = unwrapOptional(value);
  const size = memberSize(root);
  if (size !== undefined) return size;
  return shallowSize(root as object, limit) ?? walk(root as object, limit);
}
