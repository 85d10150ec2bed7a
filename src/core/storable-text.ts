// The one rule of what text the service stores, whatever writes it (an API request, an automation
// step): no NUL (PostgreSQL text cannot hold it: the insert fails) and no unpaired surrogate (valid in
// a JSON escape, not in UTF-8: both drivers would store U+FFFD, text nobody sent; and a lone
// surrogate breaks strict JSON decoders of whoever reads it back).
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const isStorableText = (s: string): boolean => !s.includes("\u0000") && !UNPAIRED_SURROGATE.test(s);

export const UNSTORABLE_TEXT = "must not contain NUL characters or unpaired surrogates";

/** Length as the contract's maxLength counts it (JSON Schema: characters, i.e. code points), not UTF-16 units. */
export function textLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Whether `s` has more than `max` characters (code points); counts only when its UTF-16 units are more. */
export const longerThan = (s: string, max: number): boolean => s.length > max && textLength(s) > max;
