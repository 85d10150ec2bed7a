// The funds room's services as a server runs them: the fund policy (made on a new database), limit
// rows, app caps, effective limits, spend authorizations and their list.
import type { Config } from "../config.js";
import type { Clock } from "../core/clock.js";
import type { PageTokens } from "../core/pagination.js";
import type { Users } from "../identity/users.js";
import type { ChangeWatch } from "../storage/change-versions.js";
import type { Storage } from "../storage/connect.js";
import { AppCaps } from "./app-caps.js";
import { EffectiveLimits } from "./effective.js";
import type { FundEventRecorder } from "./fund-events.js";
import { FundPolicies } from "./fund-policy.js";
import { SpendAuthorizations } from "./spends/spend-authorizations.js";
import { SpendList } from "./spends/spend-list.js";
import type { SpendObserver } from "./spends/spend-observer.js";
import { SubjectAppLimits } from "./subject-app-limits.js";

export interface FundWiring {
  storage: Storage;
  clock: Clock;
  pageTokens: PageTokens;
  users: Users;
  config: Pick<Config, "tenantId" | "fundCurrency">;
  /** Policy updates, made by any instance, reaching this one's kept policy. */
  policyChanges: ChangeWatch;
  /** Where limit changes and spends record their fund events (the automations' triggers). */
  events: FundEventRecorder;
  observer?: SpendObserver;
}

export async function fundServices({ storage, clock, pageTokens, users, config, policyChanges, events, observer }: FundWiring) {
  const policy = new FundPolicies(storage, clock, config.tenantId, policyChanges);
  await policy.ensure(config.fundCurrency);
  const limits = new SubjectAppLimits(storage, clock, users, policy, pageTokens, config.tenantId, events);
  const caps = new AppCaps(storage, clock, policy, pageTokens, config.tenantId);
  const effective = new EffectiveLimits(storage, clock, policy);
  const spends = new SpendAuthorizations(storage, clock, effective, observer, events);
  return { policy, limits, caps, effective, spends, spendList: new SpendList(storage, clock, pageTokens) };
}
