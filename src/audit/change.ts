// A change to record: what it was made to, by which operation, and the target as the API answers
// it before and after. Built by the service that makes the change, inside its transaction.
import type { KnownAuditTargetKind } from "../../generated/enums.js";
import type { OperationId } from "../../generated/server.js";

export type TargetKind = Exclude<KnownAuditTargetKind, "AUDIT_TARGET_KIND_UNSPECIFIED">;

export interface Target {
  kind: TargetKind;
  id: string;
  userId?: string;
  appId?: string;
}

export interface Change {
  operationId: OperationId;
  target: Target;
  /** The target as the API answers it just before (null: it did not exist). */
  before: unknown;
  /** Just after (null: it no longer exists). */
  after: unknown;
}

/** A subject's per-app limit row: its id is `<userId>/<appId>` (path ids never hold a `/`). */
export const limitTarget = (userId: string, appId: string): Target => ({ kind: "AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT", id: `${userId}/${appId}`, userId, appId });

export const capTarget = (appId: string): Target => ({ kind: "AUDIT_TARGET_KIND_APP_CAP", id: appId, appId });
export const FUND_POLICY_TARGET: Target = { kind: "AUDIT_TARGET_KIND_FUND_POLICY", id: "fund-policy" };
export const userTarget = (userId: string): Target => ({ kind: "AUDIT_TARGET_KIND_USER", id: userId, userId });
export const credentialTarget = (userId: string, credentialId: string): Target => ({ kind: "AUDIT_TARGET_KIND_CREDENTIAL", id: credentialId, userId });
export const automationTarget = (automationId: string): Target => ({ kind: "AUDIT_TARGET_KIND_AUTOMATION", id: automationId });
/** The execution a rerun (a redrive, a replay) made. */
export const executionTarget = (executionId: string): Target => ({ kind: "AUDIT_TARGET_KIND_AUTOMATION_EXECUTION", id: executionId });
export const notificationSecretTarget = (automationId: string): Target => ({ kind: "AUDIT_TARGET_KIND_NOTIFICATION_SECRET", id: automationId });
export const destinationTarget = (destinationId: string): Target => ({ kind: "AUDIT_TARGET_KIND_NOTIFICATION_DESTINATION", id: destinationId });
export const webhookSecretTarget = (automationId: string): Target => ({ kind: "AUDIT_TARGET_KIND_WEBHOOK_SECRET", id: automationId });

/** A rotated secret, as recorded: never the secret nor a hash of it. */
export const ROTATED = { rotated: true } as const;
