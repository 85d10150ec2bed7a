// What the service keeps of a parsed JSON value must read back as the value received: text by the
// one text rule (storable-text.ts) where it is stored as text, and numbers within the range of a
// double everywhere (JSON.parse turns 1e400 into Infinity, which JSON.stringify writes as null).
// A value kept as JSON text (a webhook payload) keeps any string: JSON escapes NUL and lone surrogates.
import { isFieldText, isStorableText, UNFIT_FIELD_TEXT, UNSTORABLE_TEXT } from "./storable-text.js";

export const NUMBER_OUT_OF_RANGE = "must not contain numbers beyond the range of a double (about 1.8e308)";

export interface Unstorable {
  /** Where, from `prefix`: `body.items[2].amount`. */
  path: string;
  problem: string;
}

/**
 * A place in a value, for the text rule: whether its strings (and member names) are free-form data,
 * checked only as storable text, rather than text fields; and the place of a member or an item.
 */
export interface TextPlace {
  readonly data: boolean;
  at(key: string): TextPlace;
}

/** Text fields everywhere. */
export const FIELDS: TextPlace = { data: false, at: () => FIELDS };
/** Free-form data everywhere. */
export const DATA: TextPlace = { data: true, at: () => DATA };

const problemOf = (s: string, place: TextPlace): string | undefined => {
  if (place.data) return isStorableText(s) ? undefined : UNSTORABLE_TEXT;
  return isFieldText(s) ? undefined : UNFIT_FIELD_TEXT;
};

/**
 * The first value (or key) in `root` that would not read back as received, or undefined. `text`:
 * the place of `root`, whose strings are checked by the rule of their place; false checks no strings.
 */
export function firstUnstorable(root: unknown, prefix: string, text: TextPlace | false): Unstorable | undefined {
  // Iterative: a value may nest thousands of levels deep before a validator refuses it.
  const stack: [unknown, string, TextPlace | false][] = [[root, prefix, text]];
  while (stack.length > 0) {
    const [value, path, place] = stack.pop()!;
    if (typeof value === "string") {
      const problem = place && problemOf(value, place);
      if (problem) return { path, problem };
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) return { path, problem: NUMBER_OUT_OF_RANGE };
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push([item, `${path}[${i}]`, place && place.at(String(i))]));
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        const problem = place && problemOf(key, place);
        if (problem) return { path, problem };
        stack.push([item, `${path}.${key}`, place && place.at(key)]);
      }
    }
  }
  return undefined;
}
