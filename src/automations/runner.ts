// Runs one claimed execution: its steps in order, each with `ctx.trigger` and the outputs of the
// steps before it. A step's result is stored in the same transaction as its effect, so a run
// retried after a crash resumes at the first step without a result and no effect happens twice; but
// a `notify` step, a call out, is sent again with the same `webhook-id` (notify.ts). A step the
// database failed under, or whose lease passed to another run, is no error: the run stops, and the
// execution runs again (worker.ts).
import { BoundedMap } from "../core/bounded-map.js";
import { ApiError } from "../core/errors.js";
import type { Clock } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { Origin } from "../core/origin.js";
import { withLogIds } from "../core/spans.js";
import { parseReason } from "../funds/guards.js";
import type { SubjectAppLimits } from "../funds/subject-app-limits.js";
import type { Storage } from "../storage/connect.js";
import type { AutomationExecutionsTable } from "../storage/schema.js";
import { LeaseLost, saveResults, saveResultsAlone, type ResultsSave } from "./execution-results.js";
import { writeTransaction, type Db, type WriteOptions } from "../storage/transactions.js";
import { databaseUnavailable } from "../storage/unavailable.js";
import { checkComputedId, type AutomationStep } from "./automation-input.js";
import { CelEvaluationError, checkExpression, evaluateBoolean, evaluateJson, evaluateString, evaluateTimestamp, setOwn, type CelContext, type CompiledExpression, type ExpectedResult } from "./cel.js";
import { ExecutionState, StepState, type ExecutionContext, type StepResult } from "./executions.js";
import type { FundTriggers } from "./fund-triggers.js";
import type { NotificationSecrets } from "./notification-secrets.js";
import type { NotificationSigningKeys } from "./notification-signing-keys.js";
import { notificationBody, type DeliveryAttempt, type DeliveryOutcome, type NotificationSigner, type Notifier } from "./notify.js";
import { OutputBudget } from "./resource-budget.js";
import type { RunObserver } from "./run-observer.js";

const CHECKED_CACHE_SIZE = 2_000;

export class ExecutionRunner {
  constructor(
    private readonly deps: { storage: Storage; clock: Clock; limits: SubjectAppLimits; logger: Logger; notifier: Notifier; notificationSecrets: NotificationSecrets; notificationKeys: NotificationSigningKeys; observer?: RunObserver; fundTriggers?: FundTriggers },
  ) {}

  /** Expressions as checked when their automation was saved; checked once more per process, not per run. */
  private readonly checked = new BoundedMap<string, CompiledExpression>({ entries: CHECKED_CACHE_SIZE });

  private compiled(source: string, path: string, stepNames: string[], expect: ExpectedResult): CompiledExpression {
    const key = JSON.stringify([source, path, stepNames, expect]);
    let compiled = this.checked.get(key);
    if (!compiled) {
      compiled = checkExpression(source, path, { stepNames, expect });
      this.checked.set(key, compiled);
    }
    return compiled;
  }

  /** `origin`: the run, as the worker traces it; its changes and log lines are its. */
  async run(execution: AutomationExecutionsTable, origin?: Origin): Promise<void> {
    const { observer } = this.deps;
    if (!observer) {
      await this.runSteps(execution, origin);
      return;
    }
    // `attempts` counts the runs begun, this one's included (execution-claims.ts).
    if (execution.attempts > 1) observer.resumed();
    try {
      const state = await this.runSteps(execution, origin);
      if (state === ExecutionState.PARKED) observer.parked();
      else observer.finished(state, this.deps.clock.now() - Date.parse(execution.created_at));
    } catch (e) {
      if (e instanceof LeaseLost) observer.leaseLost();
      throw e;
    }
  }

  /** Runs the steps that have no result yet; answers the state the execution ended in, or that it parked. */
  private async runSteps(execution: AutomationExecutionsTable, origin: Origin | undefined): Promise<ExecutionEnd | typeof ExecutionState.PARKED> {
    const steps = JSON.parse(execution.steps) as AutomationStep[];
    const results = JSON.parse(execution.step_results) as StepResult[];
    const { trigger, webhook } = JSON.parse(execution.context) as ExecutionContext;
    const saved = (state?: ExecutionEnd) => this.saved(execution, results, state);
    const persist = (state?: ExecutionEnd) => saveResultsAlone(this.deps.storage, saved(state), origin);
    const end = async (state: ExecutionEnd) => (await persist(state), state);
    // The last step's result is saved with the execution's final state: one write fewer per run.
    const lastPending = results.findLastIndex((r) => r.state === StepState.PENDING);
    if (lastPending === -1) return end(ExecutionState.DONE);
    const outputs = new OutputBudget();
    for (const [i, step] of steps.entries()) {
      const result = results[i];
      if (!result || result.state !== StepState.PENDING) {
        outputs.counted(result?.output); // a step done before a crash
        continue;
      }
      const final = i === lastPending ? ExecutionState.DONE : undefined;
      const ctx: CelContext = { trigger, webhook: webhook ?? null, steps: outputsBefore(steps, results, i) };
      const cel = (field: string, source: string, expect: ExpectedResult) => this.compiled(source, `automationSteps[${i}].${field}`, steps.slice(0, i).map((s) => s.stepName), expect);
      try {
        if (step.skipIfTrueCel && evaluateBoolean(cel("skipIfTrueCel", step.skipIfTrueCel, "bool"), ctx)) {
          results[i] = { ...result, state: StepState.SKIPPED };
          await persist(final);
        } else if ("evaluateExpressions" in step && step.evaluateExpressions) {
          // No effect to commit with the result: no transaction. Each value is counted as it is
          // added, so an output over its bound stops before the next expression runs.
          outputs.begin(step.stepName);
          const entries = step.evaluateExpressions.expressions.map((e, j) => {
            const value = evaluateJson(cel(`evaluateExpressions.expressions[${j}].expression`, e.expression, "any"), ctx);
            outputs.add(e.name, value);
            return [e.name, value] as const;
          });
          outputs.end();
          results[i] = { ...result, state: StepState.DONE, output: Object.fromEntries(entries) };
          await persist(final);
        } else if ("notify" in step && step.notify) {
          // A call out, not a write: no transaction is held while it waits. Its output (the attempts)
          // is kept whether it was delivered or not, and while it waits for its next attempt.
          const body = notificationBody(evaluateJson(cel("notify.bodyCel", step.notify.bodyCel, "any"), ctx), `automationSteps[${i}].notify.bodyCel`);
          const ed25519 = step.notify.signatureScheme === "NOTIFY_SIGNATURE_SCHEME_ED25519";
          const outcome = await this.notify(execution, step.stepName, step.notify.url, body, ed25519, attemptsOf(result.output), origin);
          if (outcome.kind === "parked") {
            results[i] = { ...result, output: outcome.delivery };
            await saveResultsAlone(this.deps.storage, { ...saved(), parkedUntil: new Date(outcome.until).toISOString() }, origin);
            return ExecutionState.PARKED;
          }
          outputs.addOutput(step.stepName, { ...outcome.delivery });
          if (outcome.kind === "failed") {
            results[i] = { ...result, state: StepState.ERROR, output: outcome.delivery, error: outcome.failure };
            return end(ExecutionState.ERROR);
          }
          results[i] = { ...result, state: StepState.DONE, output: outcome.delivery };
          await persist(final);
        } else {
          // The fund events the effect causes are the execution's (one deeper), woken for once it committed.
          let caused: (() => void) | undefined;
          await writeTransaction(this.deps.storage, { exclusive: [`automation_executions:${execution.id}`] }, async (trx) => {
            const effect = () => this.perform({ outer: trx, origin }, step, ctx, cel);
            const step$ = this.deps.fundTriggers?.causedBy(execution, effect);
            caused = step$?.committed;
            const output = await (step$?.run ?? effect());
            outputs.addOutput(step.stepName, output); // over a bound: the effect is rolled back with the step
            results[i] = { ...result, state: StepState.DONE, output };
            await saveResults(trx, saved(final));
          }, { origin });
          caused?.();
        }
      } catch (e) {
        if (interrupted(e)) throw e;
        results[i] = { ...result, state: StepState.ERROR, error: describe(e) };
        if (!(e instanceof ApiError) && !(e instanceof CelEvaluationError)) {
          this.deps.logger.error(withLogIds({ msg: "automation step failed", executionId: execution.id, step: step.stepName, err: e }, origin?.span));
        }
        return end(ExecutionState.ERROR);
      }
    }
    return ExecutionState.DONE;
  }

  /**
   * Makes a `notify` step's next attempt, signed with the automation's secrets, or its Ed25519 key
   * when `ed25519`. Its `webhook-id` is the execution's id and the step's name: the same for every
   * attempt, and for a run resumed after a crash, so that a receiver can drop a repeat.
   */
  private async notify(execution: AutomationExecutionsTable, stepName: string, url: string, body: string, ed25519: boolean, earlier: DeliveryAttempt[], origin: Origin | undefined): Promise<DeliveryOutcome> {
    const webhookId = `${execution.id}_${stepName}`;
    const failed = (failure: string): DeliveryOutcome => ({ kind: "failed", delivery: { webhookId, delivered: false, attempts: earlier }, failure });
    const { db } = this.deps.storage;
    let signer: NotificationSigner;
    if (ed25519) {
      const privateKey = await this.deps.notificationKeys.signing(db, execution.automation_id);
      if (!privateKey) return failed("notification not sent: the automation has no notification key pair (a save with an Ed25519 notify step makes one)");
      signer = { kind: "ed25519", privateKey };
    } else {
      const secrets = await this.deps.notificationSecrets.signing(db, execution.automation_id);
      if (secrets.length === 0) return failed("notification not sent: the automation has no notification secret (RotateNotificationSecret makes one)");
      signer = { kind: "hmac", secrets };
    }
    return this.deps.notifier.attempt(url, body, webhookId, signer, earlier, origin);
  }

  /** A step's effect, through the same funds code as the API, in the step's transaction; its answer is the step's output. */
  private async perform(inStep: WriteOptions & { outer: Db }, step: AutomationStep, ctx: CelContext, cel: (field: string, source: string, expect: ExpectedResult) => CompiledExpression): Promise<Record<string, unknown>> {
    const { limits } = this.deps;
    const str = (field: string, source: string) => evaluateString(cel(field, source, "string"), ctx);
    const id = (field: string, source: string) => checkComputedId(field, str(field, source));
    // Checked here too (the funds code checks it as `body.reason`), so that the step's error names its field.
    const reasonOf = (field: string, source: string | undefined) => (source ? parseReason(str(field, source), field) : undefined);
    if ("suspendAppLimit" in step && step.suspendAppLimit) {
      const s = step.suspendAppLimit;
      const reason = reasonOf("suspendAppLimit.reasonCel", s.reasonCel);
      return { limit: await limits.suspend(id("suspendAppLimit.userIdCel", s.userIdCel), id("suspendAppLimit.appIdCel", s.appIdCel), { reason }, inStep) };
    }
    if ("unsuspendAppLimit" in step && step.unsuspendAppLimit) {
      const s = step.unsuspendAppLimit;
      return { limit: await limits.unsuspend(id("unsuspendAppLimit.userIdCel", s.userIdCel), id("unsuspendAppLimit.appIdCel", s.appIdCel), inStep) };
    }
    if ("setAppLimitExtension" in step && step.setAppLimitExtension) {
      const s = step.setAppLimitExtension;
      const expiresAt = evaluateTimestamp(cel("setAppLimitExtension.expiresAtCel", s.expiresAtCel, "timestamp"), ctx);
      const reason = reasonOf("setAppLimitExtension.reasonCel", s.reasonCel);
      return { limit: await limits.setExtension(id("setAppLimitExtension.userIdCel", s.userIdCel), id("setAppLimitExtension.appIdCel", s.appIdCel), { limit: s.limit, expiresAt, reason }, inStep) };
    }
    throw new Error("the step has no kind");
  }

  private saved(execution: AutomationExecutionsTable, results: StepResult[], state?: ExecutionEnd): ResultsSave {
    return {
      id: execution.id,
      // A claimed execution always has one; without, no save can match and the run stops (LeaseLost).
      lease: execution.lease_until ?? "",
      stepResults: JSON.stringify(results),
      final: state ? { state, completedAt: new Date(this.deps.clock.now()).toISOString() } : undefined,
    };
  }
}

function outputsBefore(steps: readonly AutomationStep[], results: readonly StepResult[], index: number): Record<string, unknown> {
  const outputs: Record<string, unknown> = {};
  for (let j = 0; j < index; j++) {
    const r = results[j];
    const s = steps[j];
    if (s && r?.state === StepState.DONE) setOwn(outputs, s.stepName, r.output); // a step may be named `__proto__`
  }
  return outputs;
}

/** The attempts a parked notify step made so far, as its output keeps them. */
function attemptsOf(output: unknown): DeliveryAttempt[] {
  const attempts = (output as { attempts?: unknown } | null)?.attempts;
  return Array.isArray(attempts) ? (attempts as DeliveryAttempt[]) : [];
}

/** The states a run ends an execution in. */
type ExecutionEnd = typeof ExecutionState.DONE | typeof ExecutionState.ERROR;

/** Whether the run must stop without recording `e`: nothing of the step was kept, and a later run does it again. */
export const interrupted = (e: unknown): boolean => e instanceof LeaseLost || databaseUnavailable(e) !== undefined;

/** What the execution shows for a failed step: the rule broken or the evaluation error, never internals. */
function describe(e: unknown): string {
  if (e instanceof ApiError || e instanceof CelEvaluationError) return e.message;
  return "internal error while running the step";
}
