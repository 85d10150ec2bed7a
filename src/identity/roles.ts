// Roles and who may call what. The table is keyed by every secured operation id of the contract,
// so an operation added to the contract without a decision here fails the typecheck.
import type { OperationId } from "../../generated/server.js";

export type Role = "ROLE_SUPER_ADMIN" | "ROLE_FUND_ADMIN" | "ROLE_USER" | "ROLE_APP_SERVICE";
export const ROLES: readonly Role[] = ["ROLE_SUPER_ADMIN", "ROLE_FUND_ADMIN", "ROLE_USER", "ROLE_APP_SERVICE"];

export interface Principal {
  userId: string;
  credentialId: string;
  roles: Role[];
  /** The apps the credential is bound to (ROLE_APP_SERVICE); empty for every other credential. */
  appIds: readonly string[];
}

/** Whether the caller may act on spends of `appId`: administrators for every app, an app service for the apps its credential is bound to. */
export function mayActForApp(principal: Principal, appId: string): boolean {
  if (principal.roles.includes("ROLE_SUPER_ADMIN") || principal.roles.includes("ROLE_FUND_ADMIN")) return true;
  return principal.roles.includes("ROLE_APP_SERVICE") && principal.appIds.includes(appId);
}

// The webhook intake's operations take no access token: each listener's sender signs its deliveries.
type Unsecured = "svc.api.iam.v1.TokenService.CreateToken" | `svc.api.webhooks.v1.IncomingWebhookService.${string}`;

const SUPER: readonly Role[] = ["ROLE_SUPER_ADMIN"];
const FUNDS_ADMIN: readonly Role[] = ["ROLE_SUPER_ADMIN", "ROLE_FUND_ADMIN"];
/** Users with a fund of their own: not an app service, whose backend spends others' funds. */
const SUBJECTS: readonly Role[] = ["ROLE_SUPER_ADMIN", "ROLE_FUND_ADMIN", "ROLE_USER"];
const ANYONE: readonly Role[] = ROLES;
// Spends: administrators and app services (for their bound apps: the handlers scope them) act; a
// user may also read their own.
const SPENDERS: readonly Role[] = [...FUNDS_ADMIN, "ROLE_APP_SERVICE"];
const SPEND_READERS: readonly Role[] = [...SPENDERS, "ROLE_USER"];

export const ALLOWED_ROLES: Record<Exclude<OperationId, Unsecured>, readonly Role[]> = {
  "svc.api.iam.v1.UserService.Create": SUPER,
  // A fund administrator reads users to know whose limits and spends it manages; it changes none.
  "svc.api.iam.v1.UserService.Get": FUNDS_ADMIN,
  "svc.api.iam.v1.UserService.List": FUNDS_ADMIN,
  "svc.api.iam.v1.CredentialService.Create": SUPER,
  "svc.api.iam.v1.CredentialService.List": SUPER,
  "svc.api.iam.v1.CredentialService.Revoke": SUPER,
  "svc.api.funds.v1.SubjectAppLimitService.Get": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.SetLimit": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.Suspend": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.Unsuspend": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.SetExtension": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.ClearExtension": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.Delete": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.GetEffective": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.Search": FUNDS_ADMIN,
  "svc.api.funds.v1.AppCapService.Get": FUNDS_ADMIN,
  "svc.api.funds.v1.AppCapService.Set": FUNDS_ADMIN,
  "svc.api.funds.v1.AppCapService.Delete": FUNDS_ADMIN,
  "svc.api.funds.v1.AppCapService.List": FUNDS_ADMIN,
  "svc.api.funds.v1.FundPolicyService.Get": ANYONE,
  "svc.api.funds.v1.FundPolicyService.Update": FUNDS_ADMIN,
  // The caller's own rows, and only ever the caller's user id.
  "svc.api.funds.v1.MyFundLimitsService.SetLimit": SUBJECTS,
  "svc.api.funds.v1.MyFundLimitsService.Get": SUBJECTS,
  "svc.api.funds.v1.MyFundLimitsService.List": SUBJECTS,
  "svc.api.funds.v1.MyFundLimitsService.ClearLimit": SUBJECTS,
  "svc.api.funds.v1.MyFundLimitsService.GetEffective": SUBJECTS,
  "svc.api.funds.v1.SpendService.Authorize": SPENDERS,
  "svc.api.funds.v1.SpendService.Simulate": SPENDERS,
  "svc.api.funds.v1.SpendService.Capture": SPENDERS,
  "svc.api.funds.v1.SpendService.Release": SPENDERS,
  "svc.api.funds.v1.SpendService.Reverse": SPENDERS,
  "svc.api.funds.v1.SpendService.Get": SPEND_READERS,
  "svc.api.funds.v1.SpendService.List": SPEND_READERS,
  // What each sees is scoped by the handler: everything, the fund's targets, or a user's own limit rows.
  "svc.api.audit.v1.AuditService.List": SUBJECTS,
  // The sandbox's clock (the sandbox only): its super admin moves it for the whole tenant.
  "svc.api.sandbox.v1.SandboxClockService.Get": SUPER,
  "svc.api.sandbox.v1.SandboxClockService.Advance": SUPER,
  "svc.api.automations.v1.AutomationService.CreateAutomation": SUPER,
  "svc.api.automations.v1.AutomationService.GetAutomation": SUPER,
  "svc.api.automations.v1.AutomationService.GetNotificationPublicKey": SUPER,
  "svc.api.automations.v1.AutomationService.UpdateAutomation": SUPER,
  "svc.api.automations.v1.AutomationService.DeleteAutomation": SUPER,
  "svc.api.automations.v1.AutomationService.ListAutomations": SUPER,
  "svc.api.automations.v1.AutomationService.RotateWebhookSecret": SUPER,
  "svc.api.automations.v1.AutomationService.RotateNotificationSecret": SUPER,
  "svc.api.automations.v1.AutomationService.CheckAutomationSteps": SUPER,
  "svc.api.automations.v1.AutomationExecutionService.ListAutomationExecutions": SUPER,
  "svc.api.automations.v1.AutomationExecutionService.GetAutomationExecution": SUPER,
  "svc.api.automations.v1.AutomationExecutionService.Redrive": SUPER,
  "svc.api.automations.v1.AutomationExecutionService.BulkRedrive": SUPER,
  "svc.api.automations.v1.WebhookEventService.ListWebhookEvents": SUPER,
  "svc.api.automations.v1.WebhookEventService.Replay": SUPER,
  "svc.api.automations.v1.NotificationDestinationService.List": SUPER,
  "svc.api.automations.v1.NotificationDestinationService.Get": SUPER,
  "svc.api.automations.v1.NotificationDestinationService.Enable": SUPER,
  "svc.api.automations.v1.NotificationDestinationService.Disable": SUPER,
};

export function mayCall(principal: Principal, operationId: OperationId): boolean {
  const allowed = (ALLOWED_ROLES as Record<string, readonly Role[] | undefined>)[operationId];
  return allowed !== undefined && principal.roles.some((r) => allowed.includes(r));
}
