// Why verifyNotification (verify-notification.ts) refused a notification: a reason to branch on and
// a message naming what was at fault, never a secret nor a signature.

export type NotificationVerificationReason =
  /** `webhook-id`, `webhook-timestamp` or `webhook-signature` is absent or empty. */
  | "MISSING_HEADER"
  /** A header is not what the sender writes (a timestamp that is not Unix seconds, a header sent twice). */
  | "INVALID_HEADER"
  /** `webhook-timestamp` is further in the past than the tolerance: a late copy, or a clock far off. */
  | "TIMESTAMP_TOO_OLD"
  /** `webhook-timestamp` is further in the future than the tolerance. */
  | "TIMESTAMP_TOO_NEW"
  /** No `v1` (or `v1a`) signature of the header is one the secrets (or public keys) make: another key, or a changed id, timestamp or body. */
  | "NO_MATCHING_SIGNATURE"
  /** The signature is good but the body is not JSON in UTF-8. */
  | "INVALID_BODY";

/** A notification refused by `verifyNotification`: answer it with a 4xx (it is not sent again) and keep nothing of it. */
export class NotificationVerificationError extends Error {
  override readonly name = "NotificationVerificationError";

  constructor(
    readonly reason: NotificationVerificationReason,
    message: string,
  ) {
    super(message);
  }
}
