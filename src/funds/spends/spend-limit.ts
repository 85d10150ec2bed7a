// The SpendLimit oneof: which arm is set, which arms a scope may carry, and the order of limits.
import { invalidField } from "../../core/errors.js";
import { isRecord, isSet, requireRecord } from "../guards.js";
import { compareMoney, parseMoney } from "../money.js";
import type { SpendLimit } from "../types.js";

export type LimitKind = "amount" | "blocked" | "unlimited";

/**
 * Where a limit is carried, which decides the legal arms:
 * - `my-limit`: `MyFundLimitsService.SetLimit`, only `amount`;
 * - `extension`: never `blocked` (a temporary refusal is a suspension);
 * - `row`: subject-app rows, app caps and the tenant default, all three.
 */
export type LimitContext = "my-limit" | "extension" | "row";

const LEGAL_ARMS: Record<LimitContext, readonly LimitKind[]> = {
  "my-limit": ["amount"],
  extension: ["amount", "unlimited"],
  row: ["amount", "blocked", "unlimited"],
};

const KINDS: readonly LimitKind[] = ["amount", "blocked", "unlimited"];

/** The arm set on a (validated) limit. */
export function limitKind(limit: SpendLimit): LimitKind {
  if (isSet(limit.amount)) return "amount";
  return isSet(limit.blocked) ? "blocked" : "unlimited";
}

/**
 * Validates a wire SpendLimit carried in `context` and returns it normalized: only the set arm,
 * money canonical. `path` is the limit's field path, e.g. `body.limit`.
 */
export function parseSpendLimit(input: unknown, context: LimitContext, currencyCode: string, path: string): SpendLimit {
  const limit = requireRecord(input, path);
  const set = KINDS.filter((kind) => isSet(limit[kind]));
  const [kind, second] = set;
  if (kind === undefined) {
    throw invalidField(path, "exactly one of amount, blocked, unlimited must be set; none is", "LIMIT_KIND_MISSING");
  }
  if (second !== undefined) {
    throw invalidField(path, `exactly one of amount, blocked, unlimited may be set; ${set.join(" and ")} are`, "LIMIT_ONEOF_VIOLATION");
  }
  if (!LEGAL_ARMS[context].includes(kind)) {
    throw invalidField(`${path}.${kind}`, `is not accepted here (allowed: ${LEGAL_ARMS[context].join(", ")})`, "LIMIT_ARM_NOT_ALLOWED");
  }

  if (kind === "amount") {
    const amount = requireRecord(limit.amount, `${path}.amount`);
    if (!isSet(amount.money)) throw invalidField(`${path}.amount.money`, "is required", "LIMIT_MONEY_MISSING");
    return { amount: { money: parseMoney(amount.money, currencyCode, `${path}.amount.money`) } };
  }
  // blocked and unlimited carry the empty message and nothing else.
  const empty = limit[kind];
  if (!isRecord(empty) || Object.keys(empty).length > 0) throw invalidField(`${path}.${kind}`, "must be the empty object {}");
  return kind === "blocked" ? { blocked: {} } : { unlimited: {} };
}

const RANK: Record<LimitKind, number> = { blocked: 0, amount: 1, unlimited: 2 };

/** The total order of limits: blocked < any amount (by exact money) < unlimited. */
export function compareLimits(a: SpendLimit, b: SpendLimit): number {
  const byKind = RANK[limitKind(a)] - RANK[limitKind(b)];
  if (byKind !== 0) return Math.sign(byKind);
  const ma = a.amount?.money;
  const mb = b.amount?.money;
  return ma && mb ? compareMoney(ma, mb) : 0;
}
