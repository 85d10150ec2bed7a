// Who makes a change, as the audit trail records it: a caller of the API (the console calls it
// too), by the user and credential of its access token, or a step of an automation's execution.
export type Actor =
  | { kind: "user"; userId: string; credentialId: string; requestId: string }
  | { kind: "execution"; automationId: string; executionId: string; eventId: string };
