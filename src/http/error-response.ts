// The last middleware: every failure leaves as the contract's error body, with its request id and
// never a stack trace. Internal faults are logged with their stack, under the same request id; the
// database unavailable for the moment is a warning naming the cause's label only (an error's
// message may carry the database's address or user).
import type { NextFunction, Request, Response } from "express";
import { ApiError, type ErrorReason } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { withLogIds } from "../core/spans.js";
import { wasRefused } from "./client-error.js";
import { publishErrorAnswer } from "./error-answers.js";
import { LOCK_TIMEOUT, type LockShedding } from "./lock-shedding.js";
import { spanOf } from "./request-span.js";
import { statusBody } from "./status-body.js";
import { toApiError } from "./to-api-error.js";

/** RFC 6749 error codes of the token endpoint by our reasons; every other refusal is `invalid_request`. */
const OAUTH_ERRORS: Partial<Record<ErrorReason, string>> = {
  INVALID_CLIENT: "invalid_client",
  UNSUPPORTED_GRANT_TYPE: "unsupported_grant_type",
  INVALID_SCOPE: "invalid_scope",
};

/** `lockShedding` is told of each request that lost to lock_timeout (./lock-shedding.ts). */
export function errorResponse(logger: Logger, lockShedding?: LockShedding) {
  // Express recognises error middleware by its four parameters.
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    // The HTTP parser's refusal was this request's answer (client-error.ts): what failed after it,
    // touching the answer sent or the body that will never end, is no fault.
    if (wasRefused(req)) return;
    const { error, internal, unavailable } = toApiError(err);
    const requestId = String(res.locals.requestId ?? "");
    if (internal) logger.error(withLogIds({ msg: "internal error", requestId, path: req.path, err }, spanOf(res)));
    if (unavailable !== undefined) logger.warn(withLogIds({ msg: "database unavailable", requestId, path: req.path, cause: unavailable }, spanOf(res)));
    if (unavailable === LOCK_TIMEOUT && typeof res.locals.operationId === "string") {
      res.locals.lostToLock = true;
      lockShedding?.ended(res.locals.operationId, true, res.locals.lockProbe === true);
    }
    res.locals.errorReason = error.reason;
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    if (res.locals.oauth === true && (error.status === 400 || error.status === 401)) {
      // The token endpoint answers RFC 6749 errors: the Status body plus `error` and `error_description`.
      const oauthError = OAUTH_ERRORS[error.reason];
      const reason = oauthError ? error.reason : "INVALID_REQUEST";
      const oauth = new ApiError(error.status, error.code, reason, error.message, { violations: error.violations, metadata: error.metadata });
      const body = { ...statusBody(oauth, requestId), error: oauthError ?? "invalid_request", error_description: error.message };
      publishErrorAnswer({ operationId: res.locals.operationId as string | undefined, status: error.status, body });
      res.status(error.status).json(body);
      return;
    }
    const body = statusBody(error, requestId);
    publishErrorAnswer({ operationId: res.locals.operationId as string | undefined, status: error.status, body });
    res.status(error.status).json(body);
  };
}
