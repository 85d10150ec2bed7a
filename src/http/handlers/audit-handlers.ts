// Handlers of AuditService: the caller's view of the trail from its principal, then delegate and wrap.
import type { ServiceHandlers } from "../../../generated/server.js";
import type { AuditAccess, AuditTrail } from "../../audit/audit-trail.js";
import type { Principal } from "../../identity/roles.js";
import { callerOf, type RequestContext } from "../context.js";

type AuditHandlers = Pick<ServiceHandlers<RequestContext>, "AuditService">;

/** A super admin sees every event; a fund admin those on the fund's targets; a user those on their own limit rows (the role table keeps app services out). */
export function auditAccess(principal: Principal): AuditAccess {
  if (principal.roles.includes("ROLE_SUPER_ADMIN")) return { kind: "all" };
  if (principal.roles.includes("ROLE_FUND_ADMIN")) return { kind: "funds" };
  return { kind: "subject", userId: principal.userId };
}

export function auditHandlers(deps: { audit: AuditTrail }): AuditHandlers {
  const { audit } = deps;
  return {
    AuditService: {
      List: async ({ query }, ctx) => {
        const caller = callerOf(ctx);
        const page = await audit.list(auditAccess(caller), caller.userId, query);
        return { list: page.items.map((auditEvent) => ({ auditEvent })), nextPageToken: page.nextPageToken };
      },
    },
  };
}
