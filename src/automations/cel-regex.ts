// `matches()` with RE2 semantics, as the CEL specification says, instead of JavaScript's
// backtracking RegExp: re2js runs in time linear in the input, so a pattern such as `(a+)+$`
// cannot hang the server, and RE2 syntax (`(?i)`, `\z`, no backreferences or lookarounds) is the
// one users expect from CEL.
import { RE2JS } from "re2js";
import { BoundedMap } from "../core/bounded-map.js";
import { longerThan } from "../core/storable-text.js";

/** Longer patterns are refused: a pattern is a rule, not data. */
export const MAX_PATTERN_LENGTH = 1024;
const CACHE_SIZE = 128;

const cache = new BoundedMap<string, RE2JS>({ entries: CACHE_SIZE });

/** Returns why `pattern` is not an acceptable RE2 pattern, or undefined when it is. */
export function regexProblem(pattern: string): string | undefined {
  if (longerThan(pattern, MAX_PATTERN_LENGTH)) return `regular expression longer than ${MAX_PATTERN_LENGTH} characters`;
  try {
    compile(pattern);
    return undefined;
  } catch (error) {
    return `invalid regular expression: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function compile(pattern: string): RE2JS {
  const hit = cache.touch(pattern);
  if (hit) return hit;
  const re = RE2JS.compile(pattern);
  cache.set(pattern, re);
  return re;
}

/**
 * CEL `matches`: true when `pattern` matches any substring of `input` (RE2 partial match).
 * Throws an Error with a short message for an invalid or too long pattern.
 */
export function re2Matches(input: string, pattern: string): boolean {
  if (longerThan(pattern, MAX_PATTERN_LENGTH)) throw new Error(`regular expression longer than ${MAX_PATTERN_LENGTH} characters`);
  let re: RE2JS;
  try {
    re = compile(pattern);
  } catch (error) {
    throw new Error(`invalid regular expression: ${error instanceof Error ? error.message : String(error)}`);
  }
  return re.test(input);
}
