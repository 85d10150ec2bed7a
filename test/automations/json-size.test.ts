// jsonSize is exact: for any value, the UTF-8 length of JSON.stringify(toJsonValue(value)), whatever
// its strings hold (escapes, surrogates lone or paired), its CEL types, its nesting, and however the
// value was measured before (remembered containers, an accumulator grown item by item). A measure
// past its limit stops, answering a number over the limit.
import fc from "fast-check";
import { Optional } from "@marcbachmann/cel-js";
import { Duration, UnsignedInt } from "@marcbachmann/cel-js/evaluator";
import { describe, expect, it } from "vitest";
import { jsonSize, jsonStringSize } from "../../src/automations/json-size.js";
import { toJsonValue } from "../../src/automations/cel-values.js";

const SEED = Number(process.env.FC_SEED ?? 20_261_120);
const exact = (value: unknown) => Buffer.byteLength(JSON.stringify(toJsonValue(value)), "utf8");

const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: fc.constantFrom("a", '"', "\\", "\n", "\u0000", "\u001f", "\u007f", "é", "€", "\ud800", "\udc00", "😀", "\u2028"), maxLength: 40 }),
  fc.string({ unit: "grapheme-ascii", minLength: 65, maxLength: 300 }),
);

const scalar = fc.oneof(
  text,
  fc.boolean(),
  fc.constant(null),
  fc.double(),
  fc.integer(),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((n) => new UnsignedInt(n)),
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }),
  fc.integer({ min: -1_000_000, max: 1_000_000 }).map((s) => new Duration(BigInt(s), 0)),
  fc.uint8Array({ maxLength: 20 }),
);

const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, tie("list"), tie("map"), tie("cel")),
  list: fc.array(tie("value"), { maxLength: 6 }),
  map: fc.dictionary(text, tie("value"), { maxKeys: 6 }),
  cel: fc.oneof(
    fc.array(tie("value"), { maxLength: 4 }).map((items) => new Set(items)),
    fc.array(fc.tuple(fc.oneof(text, fc.bigInt({ min: -5n, max: 5n }), fc.boolean()), tie("value")), { maxLength: 4 }).map((entries) => new Map(entries)),
    tie("value").map((v) => Optional.of(v)),
    fc.constant(Optional.none()),
  ),
}));

describe("jsonSize", () => {
  it("is the UTF-8 length of the value's JSON, for any value", () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(jsonSize(v, Number.MAX_SAFE_INTEGER)).toBe(exact(v));
        // Measured again (containers remembered now), the answer is the same.
        expect(jsonSize(v, Number.MAX_SAFE_INTEGER)).toBe(exact(v));
      }),
      { seed: SEED, numRuns: 2_000 },
    );
  });

  it("counts strings as JSON writes them: escapes, two-byte to four-byte characters, lone surrogates", () => {
    for (const s of ["", "a", '"', "\\", "\n", "\u0000", "é", "€", "😀", "\ud800", "\udc00x", "\ud800\udc00", "a".repeat(100), `${"a".repeat(100)}\n`]) {
      expect(jsonStringSize(s), JSON.stringify(s)).toBe(Buffer.byteLength(JSON.stringify(s)));
    }
  });

  it("follows a list that grows at its end (a comprehension's accumulator), measuring only its new items", () => {
    fc.assert(
      fc.property(fc.array(value, { maxLength: 80 }), (items) => {
        const list: unknown[] = [];
        expect(jsonSize(list, Number.MAX_SAFE_INTEGER)).toBe(2);
        for (const item of items) {
          list.push(item);
          expect(jsonSize(list, Number.MAX_SAFE_INTEGER)).toBe(exact(list));
        }
        // The list inside another, and the same items in a fresh list.
        expect(jsonSize([list, list], Number.MAX_SAFE_INTEGER)).toBe(exact([list, list]));
        expect(jsonSize([...items], Number.MAX_SAFE_INTEGER)).toBe(exact(items));
      }),
      { seed: SEED, numRuns: 200 },
    );
  });

  it("stops past its limit without walking the rest, and measures deep values without recursion", () => {
    const shared = "x".repeat(32_000);
    const huge = Array.from({ length: 16_000 }, () => shared); // 512 MB as JSON
    const started = performance.now();
    const size = jsonSize(huge, 262_144);
    expect(size).toBeGreaterThan(262_144);
    expect(size).toBeLessThan(262_144 + 32_010);
    expect(performance.now() - started).toBeLessThan(200);
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(jsonSize(deep, Number.MAX_SAFE_INTEGER)).toBe(200_002);
    expect(jsonSize({ a: deep }, 1_000)).toBeGreaterThan(1_000);
  });
});
