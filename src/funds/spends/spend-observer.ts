// What spend authorizations report of their decisions, for the metrics (src/metrics/spend-metrics.ts),
// which the funds never import: absent unless metrics are on.
import type { DeclineCause } from "./spend-decision.js";

export interface SpendObserver {
  /** An Authorize decision committed: approved (cause unspecified) or declined for `cause`. */
  decided(approved: boolean, cause: DeclineCause): void;
}
