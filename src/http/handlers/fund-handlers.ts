// Handlers of SubjectAppLimitService, MyFundLimitsService, AppCapService and FundPolicyService:
// translate, delegate, wrap. MyFundLimitsService always acts on the caller's own rows and shows
// them without user id, tenant id or deletedAt.
import type { components } from "../../../generated/api.js";
import type { ServiceHandlers } from "../../../generated/server.js";
import type { AppCaps } from "../../funds/app-caps.js";
import type { EffectiveLimits } from "../../funds/effective.js";
import type { FundPolicies } from "../../funds/fund-policy.js";
import type { SubjectAppLimit, SubjectAppLimits } from "../../funds/subject-app-limits.js";
import { callerOf, type RequestContext } from "../context.js";

type FundsHandlers = Pick<ServiceHandlers<RequestContext>, "SubjectAppLimitService" | "MyFundLimitsService" | "AppCapService" | "FundPolicyService">;

type MyFundLimit = components["schemas"]["MyFundLimit"];

const mine = (row: SubjectAppLimit): MyFundLimit => ({ appId: row.appId, controls: row.controls, createdAt: row.createdAt, updatedAt: row.updatedAt });

export function fundsHandlers(deps: { limits: SubjectAppLimits; caps: AppCaps; policy: FundPolicies; effective: EffectiveLimits }): FundsHandlers {
  const { limits, caps, policy, effective } = deps;
  return {
    SubjectAppLimitService: {
      Get: async ({ path }) => ({ limit: await limits.get(path.user_id, path.app_id) }),
      SetLimit: async ({ path, body }, ctx) => ({ limit: await limits.setLimit(path.user_id, path.app_id, body, ctx) }),
      Suspend: async ({ path, body }, ctx) => ({ limit: await limits.suspend(path.user_id, path.app_id, body, { origin: ctx }) }),
      Unsuspend: async ({ path }, ctx) => ({ limit: await limits.unsuspend(path.user_id, path.app_id, { origin: ctx }) }),
      SetExtension: async ({ path, body }, ctx) => ({ limit: await limits.setExtension(path.user_id, path.app_id, body, { origin: ctx }) }),
      ClearExtension: async ({ path }, ctx) => ({ limit: await limits.clearExtension(path.user_id, path.app_id, ctx) }),
      Delete: async ({ path }, ctx) => (await limits.delete(path.user_id, path.app_id, ctx), {}),
      GetEffective: async ({ path }, ctx) => ({ effective: await effective.forSubject(path.user_id, path.app_id, ctx) }),
      Search: async ({ body }) => {
        const page = await limits.search(body, body.pageSize, body.pageToken);
        return { list: page.items.map((limit) => ({ limit })), nextPageToken: page.nextPageToken };
      },
    },
    MyFundLimitsService: {
      Get: async ({ path }, ctx) => ({ limit: mine(await limits.getMine(callerOf(ctx).userId, path.app_id)) }),
      SetLimit: async ({ path, body }, ctx) => ({ limit: mine(await limits.setMyLimit(callerOf(ctx).userId, path.app_id, body, ctx)) }),
      ClearLimit: async ({ path }, ctx) => {
        const row = await limits.clearMyLimit(callerOf(ctx).userId, path.app_id, ctx);
        return { limit: row ? mine(row) : null };
      },
      GetEffective: async ({ path }, ctx) => ({ effective: await effective.forCaller(callerOf(ctx).userId, path.app_id, ctx) }),
      List: async ({ query }, ctx) => {
        const page = await limits.listMine(callerOf(ctx).userId, query.page_size, query.page_token);
        return { list: page.items.map((row) => ({ limit: mine(row) })), nextPageToken: page.nextPageToken };
      },
    },
    AppCapService: {
      Get: async ({ path }) => ({ appCap: await caps.get(path.app_id) }),
      Set: async ({ path, body }, ctx) => ({ appCap: await caps.set(path.app_id, body.controls, ctx) }),
      Delete: async ({ path }, ctx) => (await caps.delete(path.app_id, ctx), {}),
      List: async ({ query }) => {
        const page = await caps.list(query.page_size, query.page_token);
        return { list: page.items.map((appCap) => ({ appCap })), nextPageToken: page.nextPageToken };
      },
    },
    FundPolicyService: {
      Get: async () => ({ fundPolicy: await policy.get() }),
      Update: async ({ body }, ctx) => ({ fundPolicy: await policy.update(body.fundPolicy, body.updateMask, ctx) }),
    },
  };
}
