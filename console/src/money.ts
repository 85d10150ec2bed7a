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

export function formatMoney(money: Money | null | undefined): string {
  if (!money) return "—";
  const fraction = String(money.nanos ?? 0).padStart(9, "0").replace(/0+$/, "");
  return `${money.currencyCode} ${money.units}${fraction ? `.${fraction.padEnd(2, "0")}` : ""}`;
}

export function formatLimit(limit: SpendLimit | null | undefined): string {
  if (!limit) return "—";
  if ("amount" in limit && limit.amount) return formatMoney(limit.amount.money);
  if ("blocked" in limit && limit.blocked) return "blocked";
  if ("unlimited" in limit && limit.unlimited) return "unlimited";
  return "—";
}

export type LimitArm = "amount" | "blocked" | "unlimited";

/** The SpendLimit of a form's arm and amount text. */
export function spendLimit(arm: LimitArm, amount: string, currencyCode: string) {
  // Inferred, not annotated: the literal arms are what request bodies accept.
  if (arm === "blocked") return { blocked: {} } as const;
  if (arm === "unlimited") return { unlimited: {} } as const;
  return { amount: { money: parseAmount(amount, currencyCode) } };
}
