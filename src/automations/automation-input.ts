// Checks an automation as saved: step names unique, every CEL expression compiled against the
// steps before it (400 CEL_INVALID with path and position), limits validated by the funds rules,
// and the webhook trigger's JWKS URL and source CIDRs. Returns the normalized shapes to store.
import type { components } from "../../generated/api.js";
import { invalidField } from "../core/errors.js";
import { parseSpendLimit } from "../funds/spend-limit.js";
import { checkJwksUrl } from "../webhooks/jwks-fetch.js";
import { parseCidrs } from "../webhooks/source-ip.js";
import { checkExpression, type ExpectedResult } from "./cel.js";

export type AutomationStep = components["schemas"]["AutomationStep"];
export type AutomationTriggerInput = components["schemas"]["AutomationTrigger"];

export interface WebhookTriggerConfig {
  method: "hmac" | "jwt";
  jwksUrl: string | null;
  allowedSourceCidrs: string[];
}

export function checkSteps(steps: readonly AutomationStep[], currencyCode: string, path = "automation.automationSteps"): AutomationStep[] {
  const names: string[] = [];
  return steps.map((step, i) => {
    const at = `${path}[${i}]`;
    if (names.includes(step.stepName)) throw invalidField(`${at}.stepName`, `duplicate step name "${step.stepName}"`, "DUPLICATE_STEP_NAME");
    const cel = (field: string, source: string | undefined | null, expect: ExpectedResult = "string") => {
      if (source !== undefined && source !== null && source !== "") checkExpression(source, `${at}.${field}`, { stepNames: names, expect });
    };
    cel("skipIfTrueCel", step.skipIfTrueCel, "bool");
    let normalized: AutomationStep = step;
    if ("evaluateExpressions" in step && step.evaluateExpressions) {
      const seen = new Set<string>();
      step.evaluateExpressions.expressions.forEach((e, j) => {
        if (seen.has(e.name)) throw invalidField(`${at}.evaluateExpressions.expressions[${j}].name`, `duplicate name "${e.name}"`, "DUPLICATE_EXPRESSION_NAME");
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
      const limit = parseSpendLimit(s.limit, "extension", currencyCode, `${at}.setAppLimitExtension.limit`);
      normalized = { ...step, setAppLimitExtension: { ...s, limit } } as AutomationStep;
    }
    names.push(step.stepName);
    return normalized;
  });
}

export function checkTrigger(triggers: readonly AutomationTriggerInput[], allowInsecureJwks: boolean, path = "automation.triggers"): WebhookTriggerConfig | null {
  const trigger = triggers[0];
  if (!trigger) return null;
  const webhook = trigger.webhook;
  const at = `${path}[0].webhook`;
  const allowedSourceCidrs = parseCidrs(webhook.allowedSourceCidrs ?? [], `${at}.allowedSourceCidrs`);
  if ("jwt" in webhook && webhook.jwt) {
    const jwksUrl = checkJwksUrl(webhook.jwt.jwksUrl, `${at}.jwt.jwksUrl`, { allowInsecure: allowInsecureJwks });
    return { method: "jwt", jwksUrl, allowedSourceCidrs };
  }
  return { method: "hmac", jwksUrl: null, allowedSourceCidrs };
}
