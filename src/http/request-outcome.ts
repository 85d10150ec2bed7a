// The one place that sees each request of the API's listener from its arrival to its answer. What
// observes requests (the access log, the metrics) is told of each once its answer is sent, with what
// the steps after this one learned of it (res.locals): its operation, its refusal's reason, the rate
// limit that refused it, the webhook listener's authentication method. (A trace's span per
// request is ./request-span.ts, the step before it only when traces are on; it is ended here.)
import type { NextFunction, Request, Response } from "express";
import type { ErrorReason } from "../core/errors.js";
import type { RatePolicyName } from "../core/rate-limiter.js";
import type { Span } from "../core/spans.js";
import { endRequestSpan, spanOf } from "./request-span.js";

export interface RequestOutcome {
  requestId: string;
  method: string;
  /** As requested, without its query: for the log, never a metric's label. */
  path: string;
  /** The contract's operation the route table matched; undefined for any other path (/healthz, /docs, an unknown one). */
  operationId: string | undefined;
  status: number;
  /** An error answer's reason. */
  reason: ErrorReason | undefined;
  /** The rate limit that refused the request (429). */
  rateLimit: RatePolicyName | undefined;
  /** The webhook intake: the listener's authentication method, once the listener was found. */
  webhookAuth: "hmac" | "jwt" | undefined;
  userId: string | undefined;
  durationMs: number;
  /** The request's span when traced: its log line carries the span's ids. */
  span: Span | undefined;
}

export interface RequestObserver {
  /** The request's answer was sent (a request whose connection closed before its answer is not reported). */
  answered(outcome: RequestOutcome): void;
}

export function observeRequests(observers: readonly RequestObserver[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    // "close" follows "finish" once the answer is sent, and comes alone when the connection closed
    // first: one listener a request, which also ends the request's span when traced.
    res.once("close", () => {
      const span = spanOf(res);
      if (span) endRequestSpan(span, res);
      if (!res.writableFinished) return;
      const { locals } = res;
      const outcome: RequestOutcome = {
        requestId: locals.requestId as string,
        method: req.method,
        path: req.path,
        operationId: locals.operationId as string | undefined,
        status: res.statusCode,
        reason: locals.errorReason as ErrorReason | undefined,
        rateLimit: locals.rateLimitedBy as RatePolicyName | undefined,
        webhookAuth: locals.webhookAuth as RequestOutcome["webhookAuth"],
        userId: (locals.principal as { userId?: string } | undefined)?.userId,
        durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        span,
      };
      for (const observer of observers) observer.answered(outcome);
    });
    next();
  };
}
