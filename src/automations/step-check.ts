// Checks steps for an editor without saving them: every problem a save would refuse (the same
// checks, through walkSteps, collected instead of stopping at the first), then, with a sample
// payload, the value of each expression that passed, evaluated as a run evaluates it but with no
// effect. The run's size bounds apply (resource-budget.ts); the other values a report shows share
// one more bound of the execution's size, so a report never holds more than twice that in values.
import { ApiError, invalidField } from "../core/errors.js";
import { parseReason } from "../funds/guards.js";
import { checkComputedId, walkSteps, type AutomationStep, type CheckedExpression, type StepRules } from "./automation-input.js";
import { CelEvaluationError, evaluateBoolean, evaluateJson, evaluateString, evaluateTimestamp, setOwn, type CelContext, type JsonValue } from "./cel.js";
import { jsonSize } from "./json-size.js";
import { notificationBody } from "./notify.js";
import { MAX_EXECUTION_OUTPUT_BYTES, OutputBudget } from "./resource-budget.js";

/** Largest sample payload, as the webhook intake's body limit. */
export const MAX_SAMPLE_PAYLOAD_BYTES = 65_536;

export interface StepCheckProblem {
  path: string;
  reason: string;
  message: string;
  position: number | null;
}

export interface ExpressionEvaluation {
  path: string;
  value: JsonValue;
  error: string | null;
}

export interface StepCheckReport {
  valid: boolean;
  problems: StepCheckProblem[];
  evaluations: ExpressionEvaluation[];
}

const ID_FIELD = /\.(userIdCel|appIdCel)$/;
const REASON_FIELD = /\.reasonCel$/;

function toProblem(error: ApiError): StepCheckProblem {
  const position = error.metadata["position"];
  return {
    path: error.metadata["path"] ?? error.metadata["field"] ?? error.violations[0]?.field ?? "",
    reason: error.reason,
    message: error.message,
    position: position === undefined ? null : Number(position),
  };
}

/** The value of one expression with the checks its field's run applies (result type, id shape, reason text). */
function evaluateField(expression: CheckedExpression, ctx: CelContext): JsonValue {
  const { compiled, expect, field } = expression;
  switch (expect) {
    case "bool":
      return evaluateBoolean(compiled, ctx);
    case "timestamp":
      return evaluateTimestamp(compiled, ctx);
    case "string": {
      const value = evaluateString(compiled, ctx);
      if (ID_FIELD.test(field)) return checkComputedId(compiled.path, value);
      return REASON_FIELD.test(field) ? (parseReason(value, compiled.path) ?? null) : value;
    }
    default: {
      const value = evaluateJson(compiled, ctx);
      if (field === "notify.bodyCel") notificationBody(value, compiled.path); // the run's bound on the body
      return value;
    }
  }
}

/** The values a report shows that a run would not store, held to MAX_EXECUTION_OUTPUT_BYTES together. */
class ShownValues {
  private total = 0;

  /** Counts `value`; throws past the bound, unless `already` shown (then it only counts). */
  add(value: JsonValue, already = false): void {
    const bytes = jsonSize(value, MAX_EXECUTION_OUTPUT_BYTES);
    if (!already && this.total + bytes > MAX_EXECUTION_OUTPUT_BYTES) {
      throw new CelEvaluationError("VALUE_TOO_LARGE", `withheld: the values of this check that a run would not store are larger than ${MAX_EXECUTION_OUTPUT_BYTES} bytes as JSON together`);
    }
    this.total += bytes;
  }
}

/** What `CheckAutomationSteps` evaluates the steps with: its `samplePayload` and `sampleWebhook`. */
export interface StepSample {
  value: unknown;
  webhook: CelContext["webhook"];
}

/**
 * Checks `steps` (paths start at `path`, as in the request) and, when `sample` is given, evaluates
 * them against `sample.value` as `ctx.trigger` and `sample.webhook` as `ctx.webhook`. Throws a 400
 * only for a sample payload over the limit.
 */
export function checkStepsReport(steps: readonly AutomationStep[], rules: StepRules, sample: StepSample | undefined, path = "automationSteps"): StepCheckReport {
  if (sample && Buffer.byteLength(JSON.stringify(sample.value) ?? "", "utf8") > MAX_SAMPLE_PAYLOAD_BYTES) {
    throw invalidField("samplePayload", `larger than ${MAX_SAMPLE_PAYLOAD_BYTES} bytes as JSON`);
  }
  const problems: StepCheckProblem[] = [];
  const checked: CheckedExpression[] = [];
  walkSteps(
    steps,
    rules,
    path,
    (check) => {
      try {
        check();
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        problems.push(toProblem(error));
      }
    },
    (expression) => checked.push(expression),
  );

  const evaluations: ExpressionEvaluation[] = [];
  if (sample) {
    const outputs: Record<string, unknown> = {};
    const stored = new OutputBudget();
    const shown = new ShownValues();
    steps.forEach((step, i) => {
      const ctx: CelContext = { trigger: sample.value, webhook: sample.webhook, steps: { ...outputs } };
      const names = "evaluateExpressions" in step && step.evaluateExpressions ? step.evaluateExpressions.expressions.map((e) => e.name) : undefined;
      // As in a run: only an evaluateExpressions step that ran without error, and was not skipped,
      // has an output; its values count against the run's bounds as they are added.
      let hasOutput = names !== undefined;
      const output: [string, JsonValue][] = [];
      stored.begin(step.stepName);
      for (const expression of checked.filter((e) => e.step === i)) {
        const entry = /^evaluateExpressions\.expressions\[(\d+)\]\.expression$/.exec(expression.field);
        const name = entry ? names?.[Number(entry[1])] : undefined;
        let value: JsonValue = null;
        let error: string | null = null;
        try {
          value = evaluateField(expression, ctx);
          if (name !== undefined && hasOutput) {
            stored.add(name, value);
            output.push([name, value]);
          } else {
            shown.add(value);
          }
        } catch (e) {
          if (!(e instanceof CelEvaluationError) && !(e instanceof ApiError)) throw e;
          [value, error] = [null, e.message];
        }
        if (error !== null || (expression.field === "skipIfTrueCel" && value === true)) hasOutput = false;
        evaluations.push({ path: expression.compiled.path, value, error });
      }
      if (hasOutput && output.length === names?.length) {
        stored.end();
        setOwn(outputs, step.stepName, Object.fromEntries(output)); // any name, `__proto__` included (fromEntries makes own properties)
      } else {
        // Values counted for an output that is not stored (a step skipped or failed) are shown all the same.
        for (const [, value] of output) shown.add(value, true);
      }
    });
  }
  return { valid: problems.length === 0, problems, evaluations };
}
