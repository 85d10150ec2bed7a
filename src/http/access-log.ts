// One log line per request, written when the answer has been sent. The path is logged without its
// query string and no header is logged, so credentials and tokens never reach the log. A traced
// request's line carries its span's ids.
import type { Logger } from "../core/logger.js";
import { withLogIds } from "../core/spans.js";
import type { RequestObserver } from "./request-outcome.js";

export function accessLog(logger: Logger): RequestObserver {
  return {
    answered: (o) =>
      logger.info(
        withLogIds({ msg: "request", requestId: o.requestId, method: o.method, path: o.path, operationId: o.operationId, status: o.status, durationMs: o.durationMs, userId: o.userId, reason: o.reason }, o.span),
      ),
  };
}
