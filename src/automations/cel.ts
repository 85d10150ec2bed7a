// The CEL module of automation steps (docs/automations.md, "CEL in steps"): check expressions when
// an automation is saved, evaluate them when a step runs. The rest of the application imports from
// here only.
//
//   const skip = checkExpression(step.skipIfTrueCel, "automationSteps[1].skipIfTrueCel", { stepNames: ["parse"], expect: "bool" });
//   if (evaluateBoolean(skip, { trigger: body, steps: outputs })) ...
export { checkExpression, MAX_COMPREHENSION_NESTING, MAX_EXPRESSION_LENGTH } from "./cel-compile.js";
export type { CheckOptions, CompiledExpression, ExpectedResult } from "./cel-compile.js";
export { PARSE_LIMITS } from "./cel-environment.js";
export {
  DEFAULT_EVALUATION_LIMITS,
  evaluate,
  evaluateBoolean,
  evaluateJson,
  evaluateString,
  evaluateTimestamp,
} from "./cel-evaluate.js";
export type { CelContext, EvaluationLimits } from "./cel-evaluate.js";
export { CelEvaluationError } from "./cel-errors.js";
export type { CelEvaluationErrorCode } from "./cel-errors.js";
export { setOwn, toJsonValue } from "./cel-values.js";
export type { JsonValue } from "./cel-values.js";
