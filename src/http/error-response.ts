// The last middleware: every failure leaves as the contract's error body, with its request id and
// never a stack trace. Internal faults are logged with their stack, under the same request id.
import type { NextFunction, Request, Response } from "express";
import { ApiError } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { statusBody } from "./status-body.js";
import { toApiError } from "./to-api-error.js";

/** RFC 6749 error codes for the token endpoint, from our stable reasons. */
const OAUTH_ERRORS: Record<string, string> = {
  INVALID_CLIENT: "invalid_client",
  UNSUPPORTED_GRANT_TYPE: "unsupported_grant_type",
  INVALID_SCOPE: "invalid_scope",
};

export function errorResponse(logger: Logger) {
  // Express recognises error middleware by its four parameters.
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const { error, internal } = toApiError(err);
    const requestId = String(res.locals.requestId ?? "");
    if (internal) logger.error({ msg: "internal error", requestId, path: req.path, err });
    res.locals.errorReason = error.reason;
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    if (res.locals.oauth === true && (error.status === 400 || error.status === 401)) {
      // The token endpoint answers RFC 6749 errors: the Status body plus `error` and `error_description`.
      const oauthError = OAUTH_ERRORS[error.reason] ?? "invalid_request";
      const oauth = new ApiError(error.status, error.code, oauthError.toUpperCase(), error.message, { violations: error.violations, metadata: error.metadata });
      res.status(error.status).json({ ...statusBody(oauth, requestId), error: oauthError, error_description: error.message });
      return;
    }
    res.status(error.status).json(statusBody(error, requestId));
  };
}
