// The admission rule of a spend, pure: the resolution decides (a suspension, `blocked` or no limit
// declines; `unlimited` approves), an amount above the cap per authorization in force declines, so
// does one more authorization than the count per window in force allows, and an amount limit
// approves only if spent + held + amount fits under it, in exact int64 nanos. The caller holds the
// window's lock while it asks and writes.
import { failedPrecondition } from "../../core/errors.js";
import type { LimitInForce } from "../effective.js";
import { formatMoney, fromNanos, MAX_NANOS } from "../money.js";
import type { Usage } from "./spend-usage.js";

export type DeclineCause = "SPEND_DECLINE_CAUSE_UNSPECIFIED" | "SPEND_DECLINE_CAUSE_SUSPENDED" | "SPEND_DECLINE_CAUSE_BLOCKED" | "SPEND_DECLINE_CAUSE_NO_LIMIT" | "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED" | "SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED" | "SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED";

export interface Verdict {
  approved: boolean;
  cause: DeclineCause;
  /** The resolution trace, then the arithmetic of an amount or unlimited decision. */
  trace: string[];
}

const APPROVED: DeclineCause = "SPEND_DECLINE_CAUSE_UNSPECIFIED";

/**
 * Decides `amount` (nanos, > 0) against the limit in force and the window's usage before it. Throws
 * 409 USAGE_OUT_OF_RANGE when an approval would take the window's usage past int64 (only possible
 * without an amount limit, which is itself an int64), so no sum of the window ever overflows.
 */
export function decideSpend(force: LimitInForce, usage: Usage, amount: bigint): Verdict {
  const { effective } = force.resolution;
  const trace = [...effective.trace];
  switch (effective.cause) {
    case "CAUSE_SUSPENSION":
      return { approved: false, cause: "SPEND_DECLINE_CAUSE_SUSPENDED", trace };
    case "CAUSE_BLOCKED":
      return { approved: false, cause: "SPEND_DECLINE_CAUSE_BLOCKED", trace };
    case "CAUSE_NO_LIMIT":
      return { approved: false, cause: "SPEND_DECLINE_CAUSE_NO_LIMIT", trace };
  }
  const money = (nanos: bigint) => formatMoney(fromNanos(nanos, force.currencyCode));
  // The cap on one authorization, before the window's sums: no usage admits an amount above it.
  if (force.perAuthorization !== null && amount > force.perAuthorization) {
    return { approved: false, cause: "SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED", trace: [...trace, `amount ${money(amount)} > per authorization ${money(force.perAuthorization)} -> decline`] };
  }
  const window = `window ${force.window.windowStart}..${force.window.windowEnd}`;
  // The count before the amounts: a window at its count admits nothing, however small.
  if (force.maxAuthorizations !== null && usage.count >= BigInt(force.maxAuthorizations)) {
    return { approved: false, cause: "SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED", trace: [...trace, `${window}: authorizations ${usage.count} + 1 > ${force.maxAuthorizations} -> decline`] };
  }
  const sum = `${window}: spent ${money(usage.spent)} + held ${money(usage.held)} + ${money(amount)}`;
  const total = usage.spent + usage.held + amount;
  if (force.limit === null) {
    if (total > MAX_NANOS) throw failedPrecondition("USAGE_OUT_OF_RANGE", "the window's usage plus this amount does not fit in an int64 of nanos");
    return { approved: true, cause: APPROVED, trace: [...trace, `${sum}, unlimited -> approve`] };
  }
  if (total <= force.limit) return { approved: true, cause: APPROVED, trace: [...trace, `${sum} <= ${money(force.limit)} -> approve`] };
  return { approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED", trace: [...trace, `${sum} > ${money(force.limit)} -> decline`] };
}
