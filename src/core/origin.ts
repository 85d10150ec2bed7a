// Where a change comes from: what a service's mutating method is told by its caller besides the
// change itself, and hands to the transactions that make it (storage/transactions.ts). A request's
// RequestContext is one (http/context.ts); the execution worker makes one per execution run;
// background work (heartbeats, pruning, sweeps, key rotation, polls) has none.
//
// It carries who made the change, for the audit event written in the change's transaction
// (src/audit/), and the trace span the change's transactions are children of.
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
