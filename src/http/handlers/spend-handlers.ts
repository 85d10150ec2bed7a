// Handlers of SpendService: the caller's access scope from its principal, then delegate and wrap.
import type { OperationId, ServiceHandlers } from "../../../generated/server.js";
import type { SpendAccess } from "../../funds/spends/spend-access.js";
import type { SpendAuthorizations } from "../../funds/spends/spend-authorizations.js";
import type { SpendAuthorization } from "../../funds/spends/spend-rows.js";
import type { SpendList } from "../../funds/spends/spend-list.js";
import type { Principal } from "../../identity/roles.js";
import { callerOf, keepAnswer, type RequestContext } from "../context.js";
import type { KeptByReference } from "../idempotency.js";

type SpendHandlers = Pick<ServiceHandlers<RequestContext>, "SpendService">;

/** Administrators act on every spend; an app service on its bound apps'; anyone else on their own. */
export function spendAccess(principal: Principal): SpendAccess {
  const { roles } = principal;
  if (roles.includes("ROLE_SUPER_ADMIN") || roles.includes("ROLE_FUND_ADMIN")) return { kind: "all" };
  if (roles.includes("ROLE_APP_SERVICE")) return { kind: "apps", appIds: principal.appIds };
  return { kind: "subject", userId: principal.userId };
}

/**
 * Authorize's 200 is kept as the authorization's id (see ../idempotency.ts): its row holds all of
 * the answer, which is rebuilt as first answered on a replay.
 */
export function spendKeptReferences(spends: Pick<SpendAuthorizations, "asAuthorized">): Partial<Record<OperationId, KeptByReference>> {
  return {
    "svc.api.funds.v1.SpendService.Authorize": {
      refer: (body) => (body as { authorization: SpendAuthorization }).authorization.id,
      answer: async (id) => ({ authorization: await spends.asAuthorized(id) }),
    },
  };
}

export function spendHandlers(deps: { spends: SpendAuthorizations; list: SpendList }): SpendHandlers {
  const { spends, list } = deps;
  const access = (ctx: RequestContext) => spendAccess(callerOf(ctx));
  // An idempotent request's answer is kept in the transaction of its change (see ../idempotency.ts).
  const keep = (ctx: RequestContext) => keepAnswer(ctx, (authorization) => ({ authorization }));
  return {
    SpendService: {
      Authorize: async ({ body }, ctx) => ({ authorization: await spends.authorize(access(ctx), body, keep(ctx), ctx) }),
      Simulate: async ({ body }, ctx) => spends.simulate(access(ctx), body),
      Capture: async ({ path, body }, ctx) => ({ authorization: await spends.capture(access(ctx), path.authorization_id, body, keep(ctx), ctx) }),
      Release: async ({ path }, ctx) => ({ authorization: await spends.release(access(ctx), path.authorization_id, keep(ctx), ctx) }),
      Reverse: async ({ path, body }, ctx) => ({ authorization: await spends.reverse(access(ctx), path.authorization_id, body, keep(ctx), ctx) }),
      Get: async ({ path }, ctx) => ({ authorization: await spends.get(access(ctx), path.authorization_id) }),
      List: async ({ query }, ctx) => {
        const page = await list.list(access(ctx), callerOf(ctx).userId, query);
        return { list: page.items.map((authorization) => ({ authorization })), nextPageToken: page.nextPageToken };
      },
    },
  };
}
