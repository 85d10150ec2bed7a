// The text rule and the clipping of derived text, for any text: a text field refuses exactly the
// control characters other than tab and newline and unpaired surrogates; a quoted value fits its
// bound in code points whatever it holds, is the JSON string of the text when it fits and a prefix
// of it cut between characters (never inside an escape) when it does not.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { clipText, isFieldText, isStorableText, quotedWithin } from "../../src/core/storable-text.js";

const codePoints = (s: string) => [...s].length;

// Any code point, lone surrogates and the characters JSON escapes weighted up.
const char = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.constantFrom("\u0001", "\u001f", "\u0085", "\t", "\n", "\r", '"', "\\", "\ud800", "\udfff", "😀", "é") },
);
const text = fc.array(char, { maxLength: 300 }).map((cs) => cs.join(""));

describe("the text rule", () => {
  it("a text field refuses C0, DEL and C1 but tab and newline, and unpaired surrogates; storable text refuses only NUL and unpaired surrogates", () => {
    for (let cp = 0; cp <= 0xa0; cp++) {
      const c = String.fromCodePoint(cp);
      const control = (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) && c !== "\t" && c !== "\n";
      expect(isFieldText(`a${c}b`), `U+${cp.toString(16)}`).toBe(!control);
      expect(isStorableText(`a${c}b`), `U+${cp.toString(16)}`).toBe(cp !== 0);
    }
    for (const s of ["\ud800", "a\udc00", "\udbff\udbff\udfff"]) expect([isFieldText(s), isStorableText(s)]).toEqual([false, false]);
    for (const s of ["😀", "\u2028\ufeff\u202e", "\ud800\udc00"]) expect([isFieldText(s), isStorableText(s)]).toEqual([true, true]);
  });
});

describe("quotedWithin", () => {
  it("fits its bound in code points; is the JSON string when it fits, else a whole-escape prefix of it ended by …", () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 3, max: 700 }), (s, max) => {
        const quoted = quotedWithin(s, max);
        const whole = JSON.stringify(s);
        expect(codePoints(quoted)).toBeLessThanOrEqual(max);
        if (codePoints(whole) <= max) {
          expect(quoted).toBe(whole);
          return;
        }
        expect(quoted.endsWith('…"')).toBe(true);
        // The cut is between characters of `s`: what precedes `…` parses back to a prefix of `s`.
        const kept = JSON.parse(`${quoted.slice(0, -2)}"`) as string;
        expect(s.startsWith(kept)).toBe(true);
        expect(whole.startsWith(quoted.slice(0, -2))).toBe(true);
        // And as much as fits: one more character would not.
        const next = [...s.slice(kept.length)][0]!;
        expect(codePoints(quoted.slice(0, -2)) + codePoints(JSON.stringify(next).slice(1, -1)) + 2).toBeGreaterThan(max);
      }),
      { numRuns: 2_000 },
    );
  });

  it("quotes 500 control characters into 200 characters, 32 whole escapes", () => {
    expect(quotedWithin("\u0001".repeat(500), 200)).toBe(`"${"\\u0001".repeat(32)}…"`);
  });
});

describe("clipText", () => {
  it("keeps text that fits; clips the rest to its bound in code points, never splitting a pair, ended by …", () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 400 }), (s, max) => {
        const clipped = clipText(s, max);
        if (codePoints(s) <= max) {
          expect(clipped).toBe(s);
          return;
        }
        expect(codePoints(clipped)).toBe(max);
        expect(clipped.endsWith("…")).toBe(true);
        expect(s.startsWith(clipped.slice(0, -1))).toBe(true);
        expect([...clipped.slice(0, -1)]).toEqual([...s].slice(0, max - 1));
      }),
      { numRuns: 2_000 },
    );
  });
});
