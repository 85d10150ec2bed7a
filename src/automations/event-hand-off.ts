// The automations' side of the intake's hand-off (webhooks/intake.ts): an event the intake accepted
// starts an execution of its automation, recorded with the event and run by this process's worker,
// which claims it at insert (a lease) while it has room for it, and otherwise is woken to claim it.
import type { ExecutionHandOff } from "../webhooks/for-automations.js";
import { newExecution } from "./executions.js";
import type { Worker } from "./worker.js";

export function workerHandOff(worker: Pick<Worker, "directLease" | "take" | "notify" | "notRecorded">): ExecutionHandOff {
  return {
    newExecution: (automationId, eventId, context, steps, receivedAt, origin) => newExecution(automationId, eventId, context, steps, receivedAt, worker.directLease(), origin),
    recorded: (execution) => (execution.lease_until ? worker.take(execution) : worker.notify()),
    notRecorded: (execution) => worker.notRecorded(execution),
  };
}
