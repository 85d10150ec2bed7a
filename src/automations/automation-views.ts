// Steps and triggers as answers carry them: every field the contract declares is present, the
// unset arms of a oneof null and an absent CEL expression "" (which the contract reads as absent).
// Steps are stored as they were saved; these are the only functions that turn them into API objects.
import type { components } from "../../generated/api.js";
import { spendLimitView } from "../funds/fund-views.js";
import type { SpendLimit } from "../funds/types.js";
import type { ListenerKind } from "../webhooks/for-automations.js";
import type { AutomationStep } from "./automation-input.js";

type IncomingWebhookTrigger = components["schemas"]["IncomingWebhookTrigger"];

const NO_KIND = { evaluateExpressions: null, suspendAppLimit: null, unsuspendAppLimit: null, setAppLimitExtension: null } as const;

export function stepView(step: AutomationStep): AutomationStep {
  const common = { stepName: step.stepName, skipIfTrueCel: step.skipIfTrueCel ?? "", ...NO_KIND };
  if (step.evaluateExpressions) return { ...common, evaluateExpressions: step.evaluateExpressions };
  if (step.suspendAppLimit) {
    const s = step.suspendAppLimit;
    return { ...common, suspendAppLimit: { userIdCel: s.userIdCel, appIdCel: s.appIdCel, reasonCel: s.reasonCel ?? "" } };
  }
  if (step.unsuspendAppLimit) return { ...common, unsuspendAppLimit: step.unsuspendAppLimit };
  // The arms of the first four kinds have no `notify` field: only this one carries it.
  if ("notify" in step && step.notify) {
    const { url, bodyCel, signatureScheme } = step.notify;
    return { ...common, notify: { url, bodyCel, ...(signatureScheme ? { signatureScheme } : {}) } };
  }
  const s = step.setAppLimitExtension!;
  return {
    ...common,
    setAppLimitExtension: { userIdCel: s.userIdCel, appIdCel: s.appIdCel, limit: spendLimitView(s.limit as SpendLimit), expiresAtCel: s.expiresAtCel, reasonCel: s.reasonCel ?? "" },
  };
}

export interface ListenerConfig {
  listenerId: string;
  url: string;
  method: ListenerKind;
  jwksUrl: string | null;
  publicKey: string | null;
  allowedSourceCidrs: string[];
}

const NO_AUTH = { hmac: null, jwt: null, standardWebhooks: null, github: null, stripe: null } as const;

export function webhookTriggerView(listener: ListenerConfig): IncomingWebhookTrigger {
  const common = { ...NO_AUTH, allowedSourceCidrs: listener.allowedSourceCidrs, listenerId: listener.listenerId, url: listener.url };
  switch (listener.method) {
    case "jwt":
      return { ...common, jwt: { jwksUrl: listener.jwksUrl ?? "" } };
    case "standardWebhooks":
      return { ...common, standardWebhooks: { publicKey: listener.publicKey } };
    case "github":
      return { ...common, github: {} };
    case "stripe":
      return { ...common, stripe: {} };
    case "hmac":
      return { ...common, hmac: {} };
  }
}
