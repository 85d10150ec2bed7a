import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/canonical-json.js";

// The text idempotency fingerprints were made of before: a kept record's fingerprint must still
// match its retry after an upgrade, so the text may not change by a byte.
function before(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(before).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${before(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

describe("canonicalJson", () => {
  it("sorts keys at every level, in arrays too, and leaves undefined members out", () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: null }], c: undefined } })).toBe('{"a":{"d":[{"y":null,"z":1}]},"b":1}');
    expect(canonicalJson([undefined, "x"])).toBe('[null,"x"]');
  });

  it("sorts keys by UTF-16 code units and escapes as JSON does", () => {
    expect(canonicalJson({ "é": 1, Z: 2, a: 3, "\u{1F600}": 4, 'q"': "\n" })).toBe('{"Z":2,"a":3,"q\\"":"\\n","é":1,"\u{1F600}":4}');
  });

  it("sorts integer-like keys as strings too (an object's own order puts them first)", () => {
    expect(canonicalJson({ "": false, 10: 1, 9: 2 })).toBe('{"":false,"10":1,"9":2}');
  });

  it("is, for every JSON value, the text fingerprints were made of before", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(before(value));
      }),
      { numRuns: 2000 },
    );
  });
});
