// Amounts as people type and read them ("12.50") and as the API carries them (Money: units as a
// decimal string, nanos): converted with string arithmetic only, never through a float.
import type { Schemas } from "./api.js";

type Money = Schemas["Money"];
type SpendLimit = Schemas["SpendLimit"];

const AMOUNT = /^\s*(\d{1,19})(?:\.(\d{1,9}))?\s*$/;

/** "12.5" → { units: "12", nanos: 500000000 }; throws on anything else. */
export function parseAmount(text: string, currencyCode: string): Money {
  const m = AMOUNT.exec(text);
  if (!m) throw new Error("Enter an amount such as 250 or 12.50 (no sign, at most 9 decimals).");
  const units = m[1]!.replace(/^0+(?=\d)/, "");
  const nanos = Number((m[2] ?? "").padEnd(9, "0"));
  return { currencyCode, units, nanos };
}

/** "12.50": the amount without its currency, as parseAmount reads it back. */
export function formatDecimal(money: Money): string {
  const fraction = String(money.nanos ?? 0).padStart(9, "0").replace(/0+$/, "");
  return `${money.units}${fraction ? `.${fraction.padEnd(2, "0")}` : ""}`;
}

export function formatMoney(money: Money | null | undefined): string {
  if (!money) return "—";
  return `${money.currencyCode} ${formatDecimal(money)}`;
}

export function formatLimit(limit: SpendLimit | null | undefined): string {
  if (!limit) return "—";
  if ("amount" in limit && limit.amount) return formatMoney(limit.amount.money);
  if ("blocked" in limit && limit.blocked) return "blocked";
  if ("unlimited" in limit && limit.unlimited) return "unlimited";
  return "—";
}

/** The words after an amount: "a month" for PERIOD_KIND_MONTHLY; a period this console does not know, in its own words. */
export function formatPeriod(period: string): string {
  const known: Record<string, string> = {
    PERIOD_KIND_DAILY: "a day",
    PERIOD_KIND_WEEKLY: "a week",
    PERIOD_KIND_MONTHLY: "a month",
    PERIOD_KIND_QUARTERLY: "a quarter",
    PERIOD_KIND_YEARLY: "a year",
  };
  return known[period] ?? `per ${period.replace("PERIOD_KIND_", "").toLowerCase().replace(/_/g, " ")}`;
}

/**
 * A limit as people say it: "USD 300 a month". The period is said only with an amount (a blocked or
 * unlimited limit has none) and only when one is set.
 */
export function formatLimitPer(limit: SpendLimit | null | undefined, period: string | null | undefined): string {
  const amount = formatLimit(limit);
  const hasAmount = !!limit && "amount" in limit && !!limit.amount;
  return hasAmount && period && period !== "PERIOD_KIND_UNSPECIFIED" ? `${amount} ${formatPeriod(period)}` : amount;
}

export type LimitArm = "amount" | "blocked" | "unlimited";

/** The SpendLimit of a form's arm and amount text. */
export function spendLimit(arm: LimitArm, amount: string, currencyCode: string) {
  // Inferred, not annotated: the literal arms are what request bodies accept.
  if (arm === "blocked") return { blocked: {} } as const;
  if (arm === "unlimited") return { unlimited: {} } as const;
  return { amount: { money: parseAmount(amount, currencyCode) } };
}

/** Money (never negative) as an exact count of nanos: its units are a decimal string, no float in between. */
export function toNanos(money: Money): bigint {
  return BigInt(money.units) * 1_000_000_000n + BigInt(money.nanos ?? 0);
}

/** The Money of a non-negative count of nanos. */
export function fromNanos(nanos: bigint, currencyCode: string): Money {
  return { currencyCode, units: (nanos / 1_000_000_000n).toString(), nanos: Number(nanos % 1_000_000_000n) };
}

/**
 * `part` as a share of `whole`, in whole hundredths of a percent, for CSS widths ("37.5%"): integer
 * arithmetic, 0 when `whole` is not positive, at most 100%.
 */
export function percentOf(part: bigint, whole: bigint): string {
  if (whole <= 0n || part <= 0n) return "0%";
  const hundredths = part >= whole ? 10_000n : (part * 10_000n) / whole;
  const fraction = (hundredths % 100n).toString().padStart(2, "0").replace(/0+$/, "");
  return `${hundredths / 100n}${fraction ? `.${fraction}` : ""}%`;
}
