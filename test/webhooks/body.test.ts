import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../src/core/json-depth.js";
import { htbS256, parseJsonBody } from "../../src/webhooks/body.js";
import { caught, expectApiError } from "./helpers.js";

const raw = (text: string) => Buffer.from(text, "utf8");

describe("parseJsonBody", () => {
  it.each([
    ['{"a":1}', { a: 1 }],
    ["[1,2]", [1, 2]],
    ["42", 42],
    ["-1.5e3", -1500],
    ['"text"', "text"],
    ["null", null],
    ["true", true],
    [" \n\t{ }\r\n ", {}],
    ['{"a":"café ✓"}', { a: "café ✓" }],
  ])("accepts any JSON value: %j", (text, value) => {
    expect(parseJsonBody(raw(text))).toEqual(value);
  });

  it.each(["", " ", "{", "{'a':1}", "undefined", "NaN", "01", '{"a":1,}', "[1] [2]", "// c\n1"])("refuses %j with 400 MALFORMED_BODY", (text) => {
    expectApiError(caught(() => parseJsonBody(raw(text))), 400, "MALFORMED_BODY");
  });

  it("refuses invalid UTF-8 (lone continuation byte, overlong encoding, surrogate)", () => {
    for (const bytes of [[0x22, 0x80, 0x22], [0x22, 0xc0, 0xaf, 0x22], [0x22, 0xed, 0xa0, 0x80, 0x22]]) {
      expectApiError(caught(() => parseJsonBody(Buffer.from(bytes))), 400, "MALFORMED_BODY");
    }
  });

  it("refuses a leading byte order mark", () => {
    const e = expectApiError(caught(() => parseJsonBody(Buffer.from([0xef, 0xbb, 0xbf, 0x31]))), 400, "MALFORMED_BODY");
    expect(e.message).toBe("the request body begins with a byte order mark");
  });

  it("refuses a number beyond the range of a double, naming where it is, and keeps any string (JSON text holds it as received)", () => {
    for (const [text, field] of [["1e309", "body"], ['{"a":{"b":[0,-1e400]}}', "body.a.b[1]"]]) {
      const e = expectApiError(caught(() => parseJsonBody(raw(text!))), 400, "INVALID_ARGUMENT");
      expect(e.message).toBe(`${field}: must not contain numbers beyond the range of a double (about 1.8e308)`);
    }
    expect(parseJsonBody(raw('{"n":1.7976931348623157e308,"s":"a\\u0000b \\ud800"}'))).toEqual({ n: 1.7976931348623157e308, s: "a\u0000b \ud800" });
  });

  it("keeps a __proto__ key as data, without touching the prototype", () => {
    const value = parseJsonBody(raw('{"__proto__":{"polluted":true}}')) as Record<string, unknown>;
    expect(Object.hasOwn(value, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("accepts nesting up to the limit and refuses deeper nesting (a 64 KB `[[[...` would overflow the stack later)", () => {
    const nested = (n: number) => raw("[".repeat(n) + "]".repeat(n));
    expect(() => parseJsonBody(nested(128))).not.toThrow();
    expectApiError(caught(() => parseJsonBody(nested(129))), 400, "MALFORMED_BODY");
    expectApiError(caught(() => parseJsonBody(nested(32_768))), 400, "MALFORMED_BODY");
  });

  it("counts depth on the bytes, skipping strings and their escapes, and stops at the first level past the limit", () => {
    expect(nestsDeeperThan(raw('{"a":"[[[[[[[[[[[[["}'), 1)).toBe(false);
    expect(nestsDeeperThan(raw('{"a":"\\"[[[\\\\"}'), 1)).toBe(false);
    expect(nestsDeeperThan(raw('{"é":["ü",{"b":[]}]}'), 3)).toBe(true);
    expect(nestsDeeperThan(raw('{"é":["ü",{"b":[]}]}'), 4)).toBe(false);
    expect(nestsDeeperThan(raw("[".repeat(10_000_000)), MAX_JSON_DEPTH)).toBe(true);
  });
});

describe("htbS256", () => {
  it("is base64url without padding of SHA-256 over the raw bytes", () => {
    expect(htbS256(Buffer.alloc(0))).toBe("47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  });
});
