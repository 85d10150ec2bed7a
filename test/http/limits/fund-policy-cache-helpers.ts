// For the tests of the kept fund policy (src/funds/fund-policy.ts): what FundPolicyService.Get and
// GetEffective show of the policy, and the kinds of change an update makes, each with what shows it.
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { amount, funds } from "./helpers.js";

/** The policy as Get shows it, and as GetEffective of a user with no row and no cap resolves it. */
export async function observe(client: ApiClient, userId: string, appId: string) {
  const f = funds(client);
  const { fundPolicy } = unwrap(await f.policyGet());
  const { effective } = unwrap(await f.effective(userId, appId));
  return { policy: fundPolicy, effective };
}

type Observed = Awaited<ReturnType<typeof observe>>;

export interface PolicyChange {
  name: string;
  body: { fundPolicy: unknown; updateMask: string };
  /** True when both answers show the change, else what they still show. */
  seen(o: Observed): true | string;
}

const units = (limit: unknown) => (limit as { amount?: { money?: { units?: string } } } | null | undefined)?.amount?.money?.units;

const shows = (ok: boolean, what: unknown): true | string => ok || `still ${JSON.stringify(what)}`;

const monthly = (currencyCode: string) => ({ limit: amount("100", 0, currencyCode), period: "PERIOD_KIND_MONTHLY" });

/** Every kind of change, in an order that applies on a policy created with USD, UTC and no defaults. */
export const POLICY_CHANGES: PolicyChange[] = [
  {
    name: "default controls",
    body: { fundPolicy: { currencyCode: "USD", defaultControls: monthly("USD") }, updateMask: "defaultControls" },
    seen: (o) => shows(units(o.policy.defaultControls?.limit) === "100" && units(o.effective.limit) === "100", [o.policy.defaultControls, o.effective.limit]),
  },
  {
    name: "time zone",
    body: { fundPolicy: { currencyCode: "USD", defaultControls: monthly("USD"), timeZone: "Pacific/Auckland" }, updateMask: "timeZone" },
    // The monthly window starts at midnight in Auckland, not at midnight UTC.
    seen: (o) => shows(o.policy.timeZone === "Pacific/Auckland" && !o.effective.usage.windowStart!.includes("T00:00:00"), [o.policy.timeZone, o.effective.usage.windowStart]),
  },
  {
    name: "currency",
    body: { fundPolicy: { currencyCode: "EUR", defaultControls: monthly("EUR"), timeZone: "Pacific/Auckland" }, updateMask: "currencyCode,defaultControls" },
    seen: (o) => shows(o.policy.currencyCode === "EUR" && o.effective.usage.spent.currencyCode === "EUR", [o.policy.currencyCode, o.effective.usage.spent]),
  },
];
