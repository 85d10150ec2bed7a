// The one rule of what text the service stores, whatever writes it (a request, an automation step).
// Any stored string: no NUL (PostgreSQL text cannot hold it) and no unpaired surrogate (UTF-8 cannot:
// the drivers would store U+FFFD). A text field (a name, a reason, a CEL expression) also holds no
// control character but tab and newline: they mean nothing there, and each escapes to six characters
// in JSON, so text quoted into another answer would outgrow its bound. docs/partners.md, "Conventions
// of the API".
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** Unicode's control characters (C0, DEL, C1) but tab (U+0009) and newline (U+000A). */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

export const isStorableText = (s: string): boolean => !s.includes("\u0000") && !UNPAIRED_SURROGATE.test(s);

export const UNSTORABLE_TEXT = "must not contain NUL characters or unpaired surrogates";

/** Text a text field may hold: storable, and no control character but tab and newline. */
export const isFieldText = (s: string): boolean => !CONTROL.test(s) && !UNPAIRED_SURROGATE.test(s);

export const UNFIT_FIELD_TEXT = "must not contain control characters (U+0000 to U+001F, U+007F to U+009F) other than tab and newline, or unpaired surrogates";

/** Length as the contract's maxLength counts it (JSON Schema: characters, i.e. code points), not UTF-16 units. */
export function textLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Whether `s` has more than `max` characters (code points); counts only when its UTF-16 units are more. */
export const longerThan = (s: string, max: number): boolean => s.length > max && textLength(s) > max;

const ELLIPSIS = "…";

/** `s` in at most `max` characters (code points, `max` >= 1): when longer, its start and `…`. Never splits a surrogate pair. */
export function clipText(s: string, max: number): string {
  if (!longerThan(s, max)) return s;
  let out = "";
  let n = 0;
  for (const ch of s) {
    if (++n > max - 1) break;
    out += ch;
  }
  return out + ELLIPSIS;
}

/**
 * `s` as a JSON string literal (quotes and escapes included) of at most `max` characters (code
 * points, `max` >= 3): clipped after escaping, so whatever `s` holds (controls, quotes, lone
 * surrogates: one character each, up to six escaped), the literal fits; cut between characters,
 * never inside an escape, and ended with `…` inside the quotes when clipped.
 */
export function quotedWithin(s: string, max: number): string {
  const whole = JSON.stringify(s);
  if (!longerThan(whole, max)) return whole;
  let out = '"';
  let n = 1;
  for (const ch of s) {
    const escaped = JSON.stringify(ch).slice(1, -1);
    // An escape is ASCII; a character written as itself is one code point (a pair included).
    const size = escaped === ch ? 1 : escaped.length;
    if (n + size + 2 > max) break; // room for `…"`
    out += escaped;
    n += size;
  }
  return `${out}${ELLIPSIS}"`;
}
