// Where a change comes from: what a service's mutating method is told by its caller besides the
// change itself, and hands to the transactions that make it (storage/transactions.ts). A request's
// RequestContext is one (http/context.ts); the execution worker makes one per execution run;
// background work (heartbeats, pruning, sweeps, key rotation, polls) has none.
//
// For now it carries the trace span the change's transactions are children of. It is the one place
// meant to carry who made the change as well (the caller, the request id, the execution), for a
// record of it written in the change's transaction.
import type { Span } from "./tracing.js";

export interface Origin {
  /** The span of the request or execution making the change, when traced: its transactions are child spans of it. */
  span?: Span | undefined;
}
