// What every handler receives besides the validated request.
import { unauthenticated } from "../core/errors.js";
import type { Principal } from "../identity/roles.js";

export interface RequestContext {
  requestId: string;
  /** The authenticated caller; absent only on the operations that take no access token. */
  principal?: Principal;
  /** The socket's peer and the X-Forwarded-For header, for what is keyed by the caller's address. */
  peer: { remoteAddress: string; forwardedFor: string | undefined };
}

/** The caller of a secured operation (the HTTP layer has already authenticated it). */
export function callerOf(ctx: RequestContext): Principal {
  if (!ctx.principal) throw unauthenticated("MISSING_ACCESS_TOKEN", "a bearer access token is required");
  return ctx.principal;
}
