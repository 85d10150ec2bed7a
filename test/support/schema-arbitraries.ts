// fast-check arbitraries derived from the contract's JSON Schemas: values valid against a schema
// (strings of any Unicode, NUL and lone surrogates included, where the schema allows them), and
// the ways of breaking one. Only the keywords the contract uses are understood; an unknown one
// fails loudly rather than generate values the schema does not mean.
import fc from "fast-check";
import { contract } from "./contract.js";

export type Schema = Record<string, any>;

const UNDERSTOOD = new Set([
  "type", "description", "example", "examples", "title", "additionalProperties", "properties", "$ref", "required", "maxLength", "minLength",
  "format", "pattern", "items", "minItems", "maxItems", "uniqueItems", "enum", "const", "oneOf", "anyOf", "readOnly", "writeOnly",
  "maxProperties", "minProperties", "minimum", "maximum", "default", "x-extensible-enum", "discriminator", "deprecated", "propertyNames",
]);

/** The schema a `$ref` (`#/components/...`) points to, followed until it is not a reference. */
export function deref(schema: Schema): Schema {
  let s = schema;
  while (typeof s?.$ref === "string") {
    s = (s.$ref as string)
      .replace(/^#\//, "")
      .split("/")
      .reduce((node: any, part) => node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], contract);
    if (!s) throw new Error(`unresolved ${schema.$ref}`);
  }
  return s;
}

// Characters a hostile or merely international client sends: ASCII, any code point, NUL, and the
// halves of surrogate pairs on their own (valid in JSON text, not in UTF-8).
const char = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constantFrom("\u0000", "\ud800", "\udfff", "\u202e", "\ufeff", "'", '"', "\\", "%", "\n") },
);
const anyString = (min: number, max: number) => fc.array(char, { minLength: min, maxLength: max }).map((cs) => cs.join("")).filter((s) => s.length >= min && s.length <= max);

/**
 * A pattern that is one character class repeated (`^[\x21-\x7E]+$`) with the schema's lengths
 * written in (`{16,40}`): stringMatching makes short strings, and filtering them to a minLength of
 * 16 would reject nearly every one, so generation would all but never end.
 */
function withLengths(pattern: string, min: number, max: number): string {
  const repeated = /^\^(\[(?:\\.|[^\]\\])+\])([+*])\$$/.exec(pattern);
  if (!repeated) return pattern;
  const least = repeated[2] === "+" ? Math.max(min, 1) : min;
  return `^${repeated[1]}{${least},${Math.max(least, max)}}$`;
}

function stringOf(s: Schema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 40, 40);
  let arb: fc.Arbitrary<string>;
  if (s.pattern) arb = fc.stringMatching(new RegExp(withLengths(s.pattern, min, max)));
  else if (s.format === "date-time") arb = fc.date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true }).map((d) => d.toISOString());
  else if (s.format === "email") arb = fc.emailAddress();
  else if (s.format === "uri") arb = fc.webUrl();
  else if (s.format === "int64") arb = fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String);
  else return anyString(min, Math.max(min, max));
  return arb.filter((v) => v.length >= min && v.length <= (s.maxLength ?? Infinity));
}

/** Values valid against `schema` (readOnly members left out: they are never sent). */
export function validValue(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(schema);
  for (const keyword of Object.keys(s)) if (!UNDERSTOOD.has(keyword)) throw new Error(`schema keyword ${keyword} is not understood by the arbitraries`);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...(s.enum as unknown[]));
  if (s.oneOf || s.anyOf) return fc.oneof(...((s.oneOf ?? s.anyOf) as Schema[]).map((x) => validValue(x, depth + 1)));
  if (Array.isArray(s.type)) return fc.oneof(...(s.type as string[]).map((type) => validValue({ ...s, type }, depth)));
  switch (s.type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer": {
      const int32 = s.format === "int32";
      return fc.integer({ min: s.minimum ?? (int32 ? -(2 ** 31) : Number.MIN_SAFE_INTEGER), max: s.maximum ?? (int32 ? 2 ** 31 - 1 : Number.MAX_SAFE_INTEGER) });
    }
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true, ...(s.minimum !== undefined ? { min: s.minimum } : {}), ...(s.maximum !== undefined ? { max: s.maximum } : {}) });
    case "string":
      return stringOf(s);
    case "array": {
      const options = { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 3, 3) };
      const items = validValue(s.items ?? {}, depth + 1);
      return s.uniqueItems ? fc.uniqueArray(items, { ...options, selector: (v) => JSON.stringify(v) }) : fc.array(items, options);
    }
    case "object":
      return objectOf(s, depth);
    case undefined:
      // No type: any JSON value (a webhook payload, a step's output).
      return fc.jsonValue({ maxDepth: 3 });
    default:
      throw new Error(`schema type ${String(s.type)} is not understood`);
  }
}

function objectOf(s: Schema, depth: number): fc.Arbitrary<unknown> {
  if (s.maxProperties === 0) return fc.constant({});
  const properties = Object.entries((s.properties ?? {}) as Record<string, Schema>).filter(([, p]) => deref(p).readOnly !== true);
  const required = new Set((s.required ?? []) as string[]);
  if (properties.length === 0 && s.additionalProperties !== false) {
    const values = typeof s.additionalProperties === "object" ? validValue(s.additionalProperties, depth + 1) : fc.jsonValue({ maxDepth: 2 });
    const keys = s.propertyNames ? stringOf({ type: "string", ...deref(s.propertyNames) }) : fc.string({ minLength: 1, maxLength: 10 });
    return fc.dictionary(keys, values, { maxKeys: Math.min(3, s.maxProperties ?? 3) });
  }
  const record = fc.record(Object.fromEntries(properties.map(([name, p]) => [name, validValue(p, depth + 1)])), {
    requiredKeys: properties.map(([name]) => name).filter((n) => required.has(n)),
  });
  const { minProperties, maxProperties } = s;
  return minProperties === undefined && maxProperties === undefined
    ? record
    : record.filter((o) => Object.keys(o).length >= (minProperties ?? 0) && Object.keys(o).length <= (maxProperties ?? Infinity));
}

// ---- breaking a value ------------------------------------------------------------------------

/** Stands for JSON text that JSON.stringify cannot write (numbers past what a double holds). */
export const RAW = (json: string) => `\u0000raw:${json}\u0000`;
/** JSON text of a value, RAW placeholders replaced by their text. */
export const toJsonText = (value: unknown): string => JSON.stringify(value).replace(/"\\u0000raw:(.*?)\\u0000"/g, (_, raw: string) => raw);

/** Every path to a member or item of `value` (not the root). */
function paths(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => [[...at, i], ...paths(v, [...at, i])]);
  if (value !== null && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => [[...at, k], ...paths(v, [...at, k])]);
  return [];
}

function replaced(value: unknown, path: (string | number)[], by: (old: unknown) => unknown): unknown {
  if (path.length === 0) return by(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? replaced(v, rest, by) : v));
  return { ...(value as object), [head as string]: replaced((value as Record<string, unknown>)[head as string], rest, by) };
}

const nested = (depth: number) => RAW("[".repeat(depth) + "]".repeat(depth));

/** Replacements that break most schemas: another type, huge, deep, past int64, odd numbers. */
export const hostileLeaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(0, -1, 1.5, true, false, null, "", [], {}, "not-what-you-want"),
  fc.constantFrom(
    "9223372036854775808",
    "18446744073709551616",
    "-9223372036854775809",
    "99999999999999999999999999",
    "1e400",
    RAW("1e400"),
    RAW("-1e400"),
    RAW("9223372036854775808"),
    RAW("9007199254740993"),
    RAW("-0"),
    RAW("1E+2"),
  ),
  fc.constantFrom(10_000, 70_000).map((n) => "x".repeat(n)),
  fc.constantFrom(64, 1_000, 50_000).map(nested),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { minKeys: 1, maxKeys: 3 }),
);

/** `value` with one member or item replaced by a hostile leaf, or an unknown member added. */
export function broken(value: unknown): fc.Arbitrary<unknown> {
  const all = paths(value);
  const replace = all.length === 0 ? fc.constant(RAW("{")) : fc.tuple(fc.constantFrom(...all), hostileLeaf).map(([path, leaf]) => replaced(value, path, () => leaf));
  const objects = [[], ...all].filter((p) => {
    const node = p.reduce((n: any, k) => n?.[k], value);
    return node !== null && typeof node === "object" && !Array.isArray(node);
  });
  const unknownMember = objects.length === 0 ? replace : fc.tuple(fc.constantFrom(...objects), fc.string({ minLength: 1, maxLength: 12 }), hostileLeaf).map(([path, name, leaf]) => replaced(value, path, (o) => ({ ...(o as object), [`zz${name}`]: leaf })));
  return fc.oneof(replace, unknownMember, hostileLeaf);
}

/** Bytes that are not UTF-8: a lone continuation byte, an overlong form, an encoded surrogate, 0xff. */
export const badUtf8 = fc.constantFrom(Buffer.from([0xff]), Buffer.from([0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]), Buffer.from([0xc3]));

/** `json` with `bytes` spliced into its first string value (else its first string, else its start). */
export function withBytes(json: string, bytes: Buffer): Buffer {
  const text = Buffer.from(json, "utf8");
  const value = text.indexOf('":"');
  const at = value >= 0 ? value + 2 : text.indexOf(0x22);
  return at < 0 ? Buffer.concat([bytes, text]) : Buffer.concat([text.subarray(0, at + 1), bytes, text.subarray(at + 1)]);
}
