// What every handler receives besides the validated request.
import { unauthenticated } from "../core/errors.js";
import type { Origin } from "../core/origin.js";
import type { Principal } from "../identity/roles.js";
import type { BeforeCommit } from "../storage/transactions.js";
import type { IncomingRequest, IntakeLimits } from "../webhooks/intake.js";

/**
 * A request is the Origin of the changes its handler makes (../core/origin.ts): its `span` is the
 * request's when traced (./request-span.ts).
 */
export interface RequestContext extends Origin {
  requestId: string;
  /** The authenticated caller; absent only on the operations that take no access token. */
  principal?: Principal;
  /** The socket's peer and the X-Forwarded-For header, for what is keyed by the caller's address. */
  peer: { remoteAddress: string; forwardedFor: string | undefined };
  /** The rate limits the webhook intake meets in its order; set on its requests (the raw ones). */
  intakeLimits?: IntakeLimits;
  /** Set on the webhook intake's requests: told the listener's authentication method (IncomingRequest.authenticatesWith). */
  intakeAuthenticatesWith?: IncomingRequest["authenticatesWith"];
  /**
   * Told by an operation that authenticates its caller itself (the token endpoint, the webhook
   * intake) once it did: the request's trace may then continue the caller's (./request-span.ts).
   * Set only when it may.
   */
  callerAuthenticated?: (() => void) | undefined;
  /**
   * Set for a request made with an Idempotency-Key: keeps `body` as the request's answer in the
   * transaction `db` of its effect. An operation whose effect is one transaction calls it there, so
   * that a crash can never leave the effect without its kept answer (a retry would run it again).
   */
  commitAnswer?: CommitAnswer;
}

export type CommitAnswer = BeforeCommit<unknown>;

/** What a service calls before its effect commits to keep `answer(result)` as the request's answer; none without an Idempotency-Key. */
export function keepAnswer<T>({ commitAnswer }: RequestContext, answer: (result: T) => unknown): BeforeCommit<T> | undefined {
  if (!commitAnswer) return undefined;
  const keep: BeforeCommit<T> = (db, result) => commitAnswer(db, answer(result));
  const { asWrite } = commitAnswer;
  if (asWrite) keep.asWrite = (result) => asWrite(answer(result));
  return keep;
}

/** The caller of a secured operation (the HTTP layer has already authenticated it). */
export function callerOf(ctx: RequestContext): Principal {
  if (!ctx.principal) throw unauthenticated("MISSING_ACCESS_TOKEN", "a bearer access token is required");
  return ctx.principal;
}
