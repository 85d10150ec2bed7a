// What every signature scheme of the intake shares: its header read once (401 MISSING_SIGNATURE when
// absent, INVALID_SIGNATURE when repeated), a bound on the signatures one header may carry, and the
// comparison of what was received with what each secret gives, in constant time and without an
// early exit, so that timing tells neither how much matched nor which secret did.
import { unauthenticated } from "../core/errors.js";
import { constantTimeEqual } from "./constant-time.js";

/** At most this many signatures of one header are compared: a sender rotating sends two. */
export const MAX_SIGNATURES = 16;

/** The signature header `name`'s one value: 401 MISSING_SIGNATURE when absent or empty, INVALID_SIGNATURE when repeated. */
export function signatureHeader(value: string | readonly string[] | undefined, name: string): string {
  if (value === undefined || value === "" || (Array.isArray(value) && value.length === 0)) {
    throw unauthenticated("MISSING_SIGNATURE", `the ${name} header is required`);
  }
  // A repeated header (Node joins unknown repeated headers, so only a caller's array) never matches.
  if (typeof value !== "string") throw unauthenticated("INVALID_SIGNATURE", `the ${name} header must be sent once`);
  return value;
}

/** 401 INVALID_SIGNATURE: no signature of the header matches the request. */
export const signatureMismatch = (name: string) => unauthenticated("INVALID_SIGNATURE", `the ${name} does not match the request`);

/**
 * The index of the first of `expected` (one per secret) that equals any of `received`, or -1.
 * Every pair is compared; an empty `expected` entry (a secret that gave nothing) never matches.
 */
export function firstMatch(expected: readonly string[], received: readonly string[]): number {
  let matched = -1;
  expected.forEach((want, index) => {
    let equal = false;
    for (const got of received) equal = constantTimeEqual(want, got) || equal;
    if (equal && want !== "" && matched < 0) matched = index;
  });
  return matched;
}
