// Checks steps for an editor without saving them: every problem a save would refuse (the same
// checks, through walkSteps, collected instead of stopping at the first), then, with a sample
// payload, the value of each expression that passed, evaluated as a run evaluates it but with no
// effect (the limit steps are not performed, so they have no output for later steps).
import { ApiError, invalidField } from "../core/errors.js";
import { checkComputedId, walkSteps, type AutomationStep, type CheckedExpression } from "./automation-input.js";
import { CelEvaluationError, evaluateBoolean, evaluateJson, evaluateString, evaluateTimestamp, setOwn, type CelContext, type JsonValue } from "./cel.js";

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

function toProblem(error: ApiError): StepCheckProblem {
  const position = error.metadata["position"];
  return {
    path: error.metadata["path"] ?? error.metadata["field"] ?? error.violations[0]?.field ?? "",
    reason: error.reason,
    message: error.message,
    position: position === undefined ? null : Number(position),
  };
}

/** The value of one expression with the checks its field's run applies (result type, id shape). */
function evaluateField(expression: CheckedExpression, ctx: CelContext): JsonValue {
  const { compiled, expect, field } = expression;
  switch (expect) {
    case "bool":
      return evaluateBoolean(compiled, ctx);
    case "timestamp":
      return evaluateTimestamp(compiled, ctx);
    case "string": {
      const value = evaluateString(compiled, ctx);
      return ID_FIELD.test(field) ? checkComputedId(compiled.path, value) : value;
    }
    default:
      return evaluateJson(compiled, ctx);
  }
}

/**
 * Checks `steps` (paths start at `path`, as in the request) and, when `sample` is given, evaluates
 * them against `sample.value` as `ctx.trigger`. Throws a 400 only for a sample payload over the limit.
 */
export function checkStepsReport(steps: readonly AutomationStep[], currencyCode: string, sample: { value: unknown } | undefined, path = "automationSteps"): StepCheckReport {
  if (sample && Buffer.byteLength(JSON.stringify(sample.value) ?? "", "utf8") > MAX_SAMPLE_PAYLOAD_BYTES) {
    throw invalidField("samplePayload", `larger than ${MAX_SAMPLE_PAYLOAD_BYTES} bytes as JSON`);
  }
  const problems: StepCheckProblem[] = [];
  const checked: CheckedExpression[] = [];
  walkSteps(
    steps,
    currencyCode,
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
    steps.forEach((step, i) => {
      const ctx: CelContext = { trigger: sample.value, steps: { ...outputs } };
      const results = checked.filter((e) => e.step === i).map((expression) => {
        try {
          return { expression, value: evaluateField(expression, ctx), error: null };
        } catch (error) {
          if (!(error instanceof CelEvaluationError) && !(error instanceof ApiError)) throw error;
          return { expression, value: null, error: error.message };
        }
      });
      for (const r of results) evaluations.push({ path: r.expression.compiled.path, value: r.value, error: r.error });

      // As in a run: only an evaluateExpressions step that ran without error, and was not skipped, has an output.
      const skipped = results.some((r) => r.expression.field === "skipIfTrueCel" && r.value === true);
      if (!("evaluateExpressions" in step && step.evaluateExpressions) || skipped || results.some((r) => r.error !== null)) return;
      const output: Record<string, JsonValue> = {};
      step.evaluateExpressions.expressions.forEach((e, j) => {
        const r = results.find((x) => x.expression.field === `evaluateExpressions.expressions[${j}].expression`);
        if (r) setOwn(output, e.name, r.value); // any name, `__proto__` included
      });
      if (Object.keys(output).length === step.evaluateExpressions.expressions.length) setOwn(outputs, step.stepName, output);
    });
  }
  return { valid: problems.length === 0, problems, evaluations };
}
