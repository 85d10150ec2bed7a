// The one rule of what text the service stores, whatever writes it (an API request, an automation
// step), at two levels:
// - any stored string, free-form data included (a sample payload): no NUL (PostgreSQL text cannot
//   hold it: the insert fails) and no unpaired surrogate (valid in a JSON escape, not in UTF-8: both
//   drivers would store U+FFFD, text nobody sent; and a lone surrogate breaks strict JSON decoders of
//   whoever reads it back);
// - a text field (a name, an email, a description, a reason, a CEL expression, a metadata value): no
//   control character either but tab and newline. They mean nothing in such text, and each one JSON
//   escapes to six characters, so text quoted into another answer would outgrow its bound; terminals
//   and logs that show the text would obey them.
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
