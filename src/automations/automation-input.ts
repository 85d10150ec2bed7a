// Checks an automation as saved: step names unique, every CEL expression compiled against the
// steps before it (400 CEL_INVALID with path and position), limits validated by the funds rules.
// Returns the normalized steps to store. The webhook trigger is checked by webhooks/webhook-trigger.ts.
import type { components } from "../../generated/api.js";
import { invalidField } from "../core/errors.js";
import { isPathId } from "../core/ids.js";
import { parseSpendLimit } from "../funds/spends/spend-limit.js";
import type { OutboundAddressPolicy } from "../webhooks/for-automations.js";
import { checkExpression, type CompiledExpression, type ExpectedResult } from "./cel.js";
import { checkNotificationUrl } from "./notify.js";

export type AutomationStep = components["schemas"]["AutomationStep"];

/**
 * An id computed by a step's CEL must have the shape of the API's path parameters (checked by the
 * contract validator, not by the funds code), or the step would create a row no API call can address.
 */
export function checkComputedId(field: string, value: string): string {
  if (!isPathId(value)) throw invalidField(field, "must evaluate to an id of 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit");
  return value;
}

/** Runs one check of a step: `checkSteps` lets its error escape; a report collects it and goes on. */
export type Guard = (check: () => void) => void;

/** An expression of a step that passed its checks, with what its field requires. */
export interface CheckedExpression {
  step: number;
  /** The field within the step, e.g. `suspendAppLimit.userIdCel`. */
  field: string;
  expect: ExpectedResult;
  compiled: CompiledExpression;
}

/** What the steps are checked against besides themselves. */
export interface StepRules {
  /** The fund's currency, of the limits steps set. */
  currencyCode: string;
  /** The addresses a `notify` step's URL may name (its host, when an IP literal). */
  notifications: OutboundAddressPolicy;
}

/** Checks steps as a save does, stopping at the first problem (the save's 400). Returns the normalized steps. */
export function checkSteps(steps: readonly AutomationStep[], rules: StepRules, path = "automation.automationSteps"): AutomationStep[] {
  return walkSteps(steps, rules, path, (check) => check());
}

/**
 * Every check of a save, each run through `guard`; `onExpression` receives each expression that
 * passed, in step and field order. Returns the steps normalized where their checks passed.
 */
export function walkSteps(
  steps: readonly AutomationStep[],
  rules: StepRules,
  path: string,
  guard: Guard,
  onExpression?: (expression: CheckedExpression) => void,
): AutomationStep[] {
  const names: string[] = [];
  return steps.map((step, i) => {
    const at = `${path}[${i}]`;
    guard(() => {
      if (names.includes(step.stepName)) throw invalidField(`${at}.stepName`, `duplicate step name "${step.stepName}"`, "DUPLICATE_STEP_NAME");
    });
    const stepNames = [...names];
    const cel = (field: string, source: string | undefined | null, expect: ExpectedResult = "string") => {
      if (source === undefined || source === null || source === "") return;
      guard(() => {
        const compiled = checkExpression(source, `${at}.${field}`, { stepNames, expect });
        onExpression?.({ step: i, field, expect, compiled });
      });
    };
    cel("skipIfTrueCel", step.skipIfTrueCel, "bool");
    let normalized: AutomationStep = step;
    if ("evaluateExpressions" in step && step.evaluateExpressions) {
      const seen = new Set<string>();
      step.evaluateExpressions.expressions.forEach((e, j) => {
        guard(() => {
          if (seen.has(e.name)) throw invalidField(`${at}.evaluateExpressions.expressions[${j}].name`, `duplicate name "${e.name}"`, "DUPLICATE_EXPRESSION_NAME");
        });
        seen.add(e.name);
        cel(`evaluateExpressions.expressions[${j}].expression`, e.expression, "any");
      });
    } else if ("suspendAppLimit" in step && step.suspendAppLimit) {
      const s = step.suspendAppLimit;
      cel("suspendAppLimit.userIdCel", s.userIdCel);
      cel("suspendAppLimit.appIdCel", s.appIdCel);
      cel("suspendAppLimit.reasonCel", s.reasonCel);
    } else if ("unsuspendAppLimit" in step && step.unsuspendAppLimit) {
      cel("unsuspendAppLimit.userIdCel", step.unsuspendAppLimit.userIdCel);
      cel("unsuspendAppLimit.appIdCel", step.unsuspendAppLimit.appIdCel);
    } else if ("setAppLimitExtension" in step && step.setAppLimitExtension) {
      const s = step.setAppLimitExtension;
      cel("setAppLimitExtension.userIdCel", s.userIdCel);
      cel("setAppLimitExtension.appIdCel", s.appIdCel);
      cel("setAppLimitExtension.expiresAtCel", s.expiresAtCel, "timestamp");
      cel("setAppLimitExtension.reasonCel", s.reasonCel);
      guard(() => {
        const limit = parseSpendLimit(s.limit, "extension", rules.currencyCode, `${at}.setAppLimitExtension.limit`);
        normalized = { ...step, setAppLimitExtension: { ...s, limit } } as AutomationStep;
      });
    } else if ("notify" in step && step.notify) {
      const s = step.notify;
      guard(() => {
        if (s.signatureScheme === "NOTIFY_SIGNATURE_SCHEME_UNSPECIFIED") throw invalidField(`${at}.notify.signatureScheme`, "must be NOTIFY_SIGNATURE_SCHEME_HMAC_SHA256 or NOTIFY_SIGNATURE_SCHEME_ED25519 (or absent, HMAC-SHA256)");
        normalized = { ...step, notify: { ...s, url: checkNotificationUrl(s.url, `${at}.notify.url`, rules.notifications) } } as AutomationStep;
      });
      cel("notify.bodyCel", s.bodyCel, "any");
    }
    names.push(step.stepName);
    return normalized;
  });
}
