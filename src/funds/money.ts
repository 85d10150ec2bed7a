// Exact money. Amounts are compared and converted with BigInt only: a JS number cannot hold
// every int64, and the seed bounds money by int64 (units * 10^9 + nanos).
import { invalidField } from "../core/errors.js";
import { isRecord } from "./guards.js";
import type { Money } from "./types.js";

const NANOS_PER_UNIT = 1_000_000_000n;
const INT64_MAX = 2n ** 63n - 1n;
/** An int64 never needs more than 19 digits; longer strings are refused before BigInt sees them. */
const UNITS_PATTERN = /^[0-9]{1,19}$/;

/**
 * Validates a wire Money against the tenant's fund currency and returns its canonical form
 * (units without leading zeros). `path` is the money's field path, e.g. `body.limit.amount.money`;
 * violations name the offending sub-field under it.
 */
export function parseMoney(input: unknown, currencyCode: string, path: string): Money {
  if (!isRecord(input)) throw invalidField(path, "must be a Money object", "INVALID_MONEY");

  const currency = input.currencyCode;
  if (typeof currency !== "string") throw invalidField(`${path}.currencyCode`, "must be a string", "INVALID_MONEY");
  if (currency !== currencyCode) {
    throw invalidField(`${path}.currencyCode`, `must be the fund currency ${currencyCode}`, "CURRENCY_MISMATCH");
  }

  // Signs, spaces, decimals, exponents and numbers (which may already have lost precision) all fail here.
  const units = input.units;
  if (typeof units !== "string" || !UNITS_PATTERN.test(units)) {
    throw invalidField(`${path}.units`, "must be a decimal string of a non-negative int64", "INVALID_MONEY");
  }

  const nanos = input.nanos;
  if (typeof nanos !== "number" || !Number.isInteger(nanos) || nanos < 0 || nanos >= Number(NANOS_PER_UNIT)) {
    throw invalidField(`${path}.nanos`, "must be an integer from 0 to 999999999", "INVALID_MONEY");
  }

  const money: Money = { currencyCode: currency, units: BigInt(units).toString(), nanos };
  if (toNanos(money) > INT64_MAX) {
    throw invalidField(`${path}.units`, "units * 10^9 + nanos must fit in an int64", "MONEY_OUT_OF_RANGE");
  }
  return money;
}

/** The exact amount in nanos. */
export const toNanos = (money: Money): bigint => BigInt(money.units) * NANOS_PER_UNIT + BigInt(money.nanos);

/** Negative, zero or positive as a is less than, equal to or greater than b. */
export function compareMoney(a: Money, b: Money): number {
  // Every stored amount is in the one fund currency; two currencies here is a bug, not a request error.
  if (a.currencyCode !== b.currencyCode) throw new Error(`cannot compare ${a.currencyCode} with ${b.currencyCode}`);
  const d = toNanos(a) - toNanos(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** For people (traces): `USD 250`, `USD 250.5`. */
export function formatMoney(money: Money): string {
  const fraction = money.nanos === 0 ? "" : `.${String(money.nanos).padStart(9, "0").replace(/0+$/, "")}`;
  return `${money.currencyCode} ${money.units}${fraction}`;
}

/** The largest amount of nanos money may hold, and a window's usage with it (int64). */
export const MAX_NANOS = INT64_MAX;

/** Money of `nanos` (0 <= nanos <= int64 max) in `currencyCode`. */
export function fromNanos(nanos: bigint, currencyCode: string): Money {
  if (nanos < 0n || nanos > INT64_MAX) throw new Error(`nanos out of range: ${nanos}`);
  return { currencyCode, units: (nanos / NANOS_PER_UNIT).toString(), nanos: Number(nanos % NANOS_PER_UNIT) };
}
