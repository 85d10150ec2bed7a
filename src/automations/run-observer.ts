// What the execution runner reports of each run, for the metrics (src/metrics/execution-metrics.ts),
// which the automations never import: absent unless metrics are on.
import type { KnownAutomationExecutionState } from "../../generated/enums.js";

export interface RunObserver {
  /** A run began on an execution whose earlier run began and did not finish (its instance died, or the database failed under it). */
  resumed(): void;
  /** A run ended its execution in `state`, `lagMs` after the event that started it was accepted. */
  finished(state: KnownAutomationExecutionState, lagMs: number): void;
  /** A run parked its execution: a notification to try again later, or its destination at its cap of requests in flight. */
  parked(): void;
  /** A run stopped because its execution's lease had lapsed and passed to another run. */
  leaseLost(): void;
}
