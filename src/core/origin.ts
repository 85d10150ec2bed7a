// Where a change comes from, handed by a service's caller to the transactions that make the change
// (storage/transactions.ts): who made it, for the audit event written in its transaction (src/audit/),
// and the span its transactions are children of. A request's RequestContext is one (http/context.ts),
// the execution worker makes one per run; background work (heartbeats, sweeps, polls) has none.
import type { Span } from "./spans.js";

/**
 * Who makes a change: a caller of the API (the console calls it too), by the user and credential of
 * its access token, or a step of an automation's execution.
 */
export type Actor =
  | { kind: "user"; userId: string; credentialId: string; requestId: string }
  | { kind: "execution"; automationId: string; executionId: string; eventId: string };

export interface Origin {
  /** Who makes the change; absent for what no caller asked for (the bootstrap admin at first start). */
  actor?: Actor | undefined;
  /** The span of the request or execution making the change, when traced: its transactions are child spans of it. */
  span?: Span | undefined;
}
