// What the console says instead of the API's names: an audited operation in words ("Limit set"),
// and a field path of a refused save (`automationSteps[0].evaluateExpressions.expressions[0].expression`)
// as the console labels that field ("Step 1 (Evaluate expressions), expression 1").
import type { operations } from "../../generated/api.js";

type OperationId = keyof operations;

/** Every operation the contract audits (`x-audit` with a target), in words; a unit test keeps it complete. */
export const OPERATION_WORDS: Partial<Record<OperationId, string>> = {
  "svc.api.iam.v1.UserService.Create": "User created",
  "svc.api.iam.v1.CredentialService.Create": "Credential issued",
  "svc.api.iam.v1.CredentialService.Revoke": "Credential revoked",
  "svc.api.funds.v1.SubjectAppLimitService.Delete": "Limit row deleted",
  "svc.api.funds.v1.SubjectAppLimitService.SetLimit": "Limit set",
  "svc.api.funds.v1.SubjectAppLimitService.Suspend": "Suspended",
  "svc.api.funds.v1.SubjectAppLimitService.Unsuspend": "Unsuspended",
  "svc.api.funds.v1.SubjectAppLimitService.SetExtension": "Extension set",
  "svc.api.funds.v1.SubjectAppLimitService.ClearExtension": "Extension cleared",
  "svc.api.funds.v1.MyFundLimitsService.SetLimit": "Own limit set",
  "svc.api.funds.v1.MyFundLimitsService.ClearLimit": "Own limit cleared",
  "svc.api.funds.v1.AppCapService.Set": "App cap set",
  "svc.api.funds.v1.AppCapService.Delete": "App cap removed",
  "svc.api.funds.v1.FundPolicyService.Update": "Fund policy updated",
  "svc.api.automations.v1.AutomationService.CreateAutomation": "Automation created",
  "svc.api.automations.v1.AutomationService.UpdateAutomation": "Automation changed",
  "svc.api.automations.v1.AutomationService.DeleteAutomation": "Automation deleted",
  "svc.api.automations.v1.AutomationService.RotateWebhookSecret": "Webhook secret rotated",
  "svc.api.automations.v1.AutomationService.RotateNotificationSecret": "Notification secret rotated",
  "svc.api.automations.v1.WebhookEventService.Replay": "Webhook event replayed",
  "svc.api.automations.v1.NotificationDestinationService.Enable": "Destination enabled",
  "svc.api.automations.v1.NotificationDestinationService.Disable": "Destination disabled",
  "svc.api.automations.v1.AutomationExecutionService.BulkRedrive": "Failed executions redriven",
  "svc.api.automations.v1.AutomationExecutionService.Redrive": "Execution redriven",
  "svc.api.sandbox.v1.SandboxClockService.Advance": "Sandbox clock moved forward",
};

/** The words of an operation; one this console does not know yet reads as its service and method. */
export function operationWords(operationId: string): string {
  return OPERATION_WORDS[operationId as OperationId] ?? operationId.split(".").slice(-2).join(".");
}

/** A step's kind as the steps editor names it. */
export const STEP_KINDS = {
  evaluateExpressions: "Evaluate expressions",
  suspendAppLimit: "Suspend an app limit",
  unsuspendAppLimit: "Unsuspend an app limit",
  setAppLimitExtension: "Set an app limit extension",
  notify: "Send a notification",
} as const;

/** Fields as the console's forms label them (lower case: they follow a step or the trigger). */
const FIELD_WORDS: Record<string, string> = {
  stepName: "step name",
  skipIfTrueCel: "skip if true",
  expressions: "expressions",
  name: "name",
  expression: "expression",
  userIdCel: "user id",
  appIdCel: "app id",
  reasonCel: "reason",
  expiresAtCel: "expires at",
  limit: "limit",
  url: "URL",
  bodyCel: "body",
  conditionCel: "condition",
  eventTypes: "event types",
  usageThresholdPercents: "usage thresholds",
  jwksUrl: "JWKS URL",
  standardWebhooks: "Standard Webhooks",
  publicKey: "public key",
  webhookSecret: "sender's secret",
  allowedSourceCidrs: "allowed source CIDRs",
  displayName: "name",
  description: "description",
};

/** A server message about the field at `path` ("automationSteps[0].stepName: must be …") with the field in words. */
export function messageWords(path: string, message: string): string {
  const rest = message.startsWith(`${path}: `) ? message.slice(path.length + 2) : message;
  return path ? `${fieldWords(path)}: ${rest}` : rest;
}

const TRIGGER_KINDS: Record<string, string> = { webhook: "Incoming webhook", fundEvents: "Fund events" };

/**
 * A request field path as the console names the field: a step by its number and kind, an item of
 * a list by its number, the rest by its label; a segment it does not know is kept as it is.
 */
export function fieldWords(path: string): string {
  const parts: string[] = [];
  // The body (`body.`) and the automation a form edits (`automation.`) go without saying; an index
  // may come as a segment of its own (`triggers.0`).
  const segments = path
    .replace(/^body\./, "")
    .replace(/^automation\./, "")
    .replace(/\.(\d+)(?=\.|$)/g, "[$1]")
    .split(".");
  for (let i = 0; i < segments.length; i++) {
    const [, name = "", index] = /^([^[]+)(?:\[(\d+)\])?$/.exec(segments[i] ?? "") ?? [];
    const number = index === undefined ? "" : ` ${Number(index) + 1}`;
    if (name === "automationSteps" || name === "triggers") {
      const kind = segments[i + 1] ?? "";
      const known = name === "automationSteps" ? STEP_KINDS[kind as keyof typeof STEP_KINDS] : TRIGGER_KINDS[kind];
      parts.push(`${name === "automationSteps" ? "Step" : "Trigger"}${number}${known ? ` (${known})` : ""}`);
      // The kind is said with the step or trigger, not again as a field.
      if (known) i++;
    } else if (name === "expressions" && index !== undefined) {
      parts.push(`expression${number}`);
      // `expressions[0].expression` is the expression itself.
      if (segments[i + 1] === "expression") i++;
    } else {
      parts.push(`${FIELD_WORDS[name] ?? name}${number}`);
    }
  }
  const text = parts.join(", ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}
