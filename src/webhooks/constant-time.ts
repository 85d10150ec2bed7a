// Constant-time comparison of signatures and secrets received from outside.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

// Both sides of the comparison are first MACed with a per-process random key: the results have the
// same length whatever the header's length or alphabet, so `timingSafeEqual` never throws and the
// time taken says nothing about how much of the signature matched.
const COMPARE_KEY = randomBytes(32);
const digest = (value: string) => createHmac("sha256", COMPARE_KEY).update(value, "utf8").digest();

/** Constant-time string equality, safe for any lengths and contents. */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}
