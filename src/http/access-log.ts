// One log line per request, written when the answer has been sent. The path is logged without its
// query string and no header is logged, so credentials and tokens never reach the log.
import type { NextFunction, Request, Response } from "express";
import type { Logger } from "../core/logger.js";

export function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const principal = res.locals.principal as { userId?: string } | undefined;
      logger.info({
        msg: "request",
        requestId: res.locals.requestId,
        method: req.method,
        path: req.path,
        operationId: res.locals.operationId,
        status: res.statusCode,
        durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        userId: principal?.userId,
        reason: res.locals.errorReason,
      });
    });
    next();
  };
}
