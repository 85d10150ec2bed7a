// What the service keeps of a parsed JSON value must read back as the value received: text by the
// one text rule (storable-text.ts) where it is stored as text, and numbers within the range of a
// double everywhere (JSON.parse turns 1e400 into Infinity, which JSON.stringify writes as null).
// A value kept as JSON text (a webhook payload) keeps any string: JSON escapes NUL and lone surrogates.
import { isStorableText, UNSTORABLE_TEXT } from "./storable-text.js";

export const NUMBER_OUT_OF_RANGE = "must not contain numbers beyond the range of a double (about 1.8e308)";

export interface Unstorable {
  /** Where, from `prefix`: `body.items[2].amount`. */
  path: string;
  problem: string;
}

/** The first value (or key) in `root` that would not read back as received, or undefined. `text`: whether strings are checked. */
export function firstUnstorable(root: unknown, prefix: string, { text }: { text: boolean }): Unstorable | undefined {
  // Iterative: a value may nest thousands of levels deep before a validator refuses it.
  const stack: [unknown, string][] = [[root, prefix]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      if (text && !isStorableText(value)) return { path, problem: UNSTORABLE_TEXT };
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) return { path, problem: NUMBER_OUT_OF_RANGE };
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push([item, `${path}[${i}]`]));
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        if (text && !isStorableText(key)) return { path, problem: UNSTORABLE_TEXT };
        stack.push([item, `${path}.${key}`]);
      }
    }
  }
  return undefined;
}
