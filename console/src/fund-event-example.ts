// The sample `ctx.trigger` of a fund-event automation's steps: an event as the server makes it (a
// Salesforce spend of `userId`, a user of the tenant, that took the month's usage past 80 %), typed by
// the contract so that it follows its changes. Only for checking expressions as typed; nothing is sent.
import type { Schemas } from "./api.js";

const usd = (units: string) => ({ currencyCode: "USD", units, nanos: 0 });
const usage = {
  windowStart: "2026-11-01T00:00:00Z",
  windowEnd: "2026-12-01T00:00:00Z",
  spent: usd("60"),
  held: usd("25"),
  limit: usd("100"),
  remaining: usd("15"),
  authorizations: "3",
  maxAuthorizations: null,
  authorizationsRemaining: null,
};

export const fundEventExample = (userId: string): Schemas["FundEvent"] => ({
  id: "fev_0PzW3nQ8kR2sT5vX",
  type: "FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED",
  occurredAt: "2026-11-20T09:30:00Z",
  userId,
  appId: "app-salesforce",
  depth: 0,
  causedBy: null,
  authorization: {
    id: "Sa4kP9mW2xQ7rT5n",
    userId,
    appId: "app-salesforce",
    amount: usd("15"),
    state: "SPEND_AUTHORIZATION_STATE_PENDING",
    capturedAmount: usd("0"),
    reversedAmount: usd("0"),
    expiresAt: "2026-11-20T09:40:00Z",
    windowStart: usage.windowStart,
    windowEnd: usage.windowEnd,
    decision: {
      approved: true,
      cause: "SPEND_DECLINE_CAUSE_UNSPECIFIED",
      scope: "SCOPE_SUBJECT_APP",
      period: "PERIOD_KIND_MONTHLY",
      trace: ["SCOPE_SUBJECT_APP: base limit USD 100 per PERIOD_KIND_MONTHLY -> limit", "window 2026-11-01T00:00:00.000Z..2026-12-01T00:00:00.000Z: spent USD 60 + held USD 10 + USD 15 <= USD 100 -> approve"],
      usage,
    },
    metadata: { orderId: "ord_8812" },
    createdAt: "2026-11-20T09:30:00Z",
    updatedAt: "2026-11-20T09:30:00Z",
  },
  amount: null,
  usageThreshold: { percent: 80, usage },
  limitChange: null,
});
