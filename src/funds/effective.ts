// The limit in force for one subject and one app now: the three layers read from one snapshot,
// resolved by the pure rule of ./resolve.ts at the clock's time.
import type { Clock } from "../core/clock.js";
import type { Storage } from "../storage/connect.js";
import { readTransaction } from "../storage/transactions.js";
import type { AppCaps } from "./app-caps.js";
import type { FundPolicies } from "./fund-policy.js";
import { resolveEffective } from "./resolve.js";
import type { SubjectAppLimits } from "./subject-app-limits.js";
import type { EffectiveLimit, SpendLimitView } from "./types.js";
import { spendLimitView } from "./views.js";

/** The resolution as answered: its limit with every arm present. */
export type EffectiveLimitView = Omit<EffectiveLimit, "limit"> & { limit: SpendLimitView | null };

export class EffectiveLimits {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly limits: SubjectAppLimits,
    private readonly caps: AppCaps,
    private readonly policy: FundPolicies,
  ) {}

  /** For an administrator: 404 USER_NOT_FOUND for an unknown user. */
  async forSubject(userId: string, appId: string): Promise<EffectiveLimitView> {
    await this.limits.requireUser(userId);
    return this.resolve(userId, appId);
  }

  /** For the caller (who exists: it authenticated). */
  async forCaller(userId: string, appId: string): Promise<EffectiveLimitView> {
    return this.resolve(userId, appId);
  }

  private async resolve(userId: string, appId: string): Promise<EffectiveLimitView> {
    const layers = await readTransaction(this.storage, async (db) => [
      { scope: "SCOPE_SUBJECT_APP" as const, controls: await this.limits.controls(db, userId, appId) },
      { scope: "SCOPE_APP_CAP" as const, controls: await this.caps.controls(db, appId) },
      { scope: "SCOPE_TENANT_DEFAULT" as const, controls: (await this.policy.load(db)).defaultControls },
    ]);
    const effective = resolveEffective(layers, this.clock.now());
    return { ...effective, limit: effective.limit ? spendLimitView(effective.limit) : null };
  }
}
