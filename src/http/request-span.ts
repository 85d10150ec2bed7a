// A span per request when traces are on (src/core/tracing.ts): of kind SERVER, named by the
// contract's operation id (UNMATCHED_SPAN for what no operation takes), continuing the caller's W3C
// `traceparent` when it sends a well-formed one. Its attributes are bounded and name nothing the
// caller sent: the method, the contract's path template (never the path itself), the status, and
// the contract's reason of a refusal or failure. A 5xx fails it. The first step of every request only
// when traces are on (they are started before the app is made): off, requests do not pass through it.
// The span goes with the request explicitly (res.locals.span): its RequestContext hands it to the
// services as the Origin of their changes, and the request's log lines carry its ids.
import type { NextFunction, Request, Response } from "express";
import { startSpan, type AttributeValue, type Span } from "../core/tracing.js";
import { routeOf } from "./route-table.js";

/** The span name of a request no operation of the contract takes: 404 and 405 answers, /healthz, /readyz, /docs, the console. */
export const UNMATCHED_SPAN = "http.unmatched";

export function requestSpan(req: Request, res: Response, next: NextFunction): void {
  const route = routeOf(req);
  const attributes: Record<string, AttributeValue> = { "http.request.method": req.method };
  if (route) attributes["http.route"] = route.path;
  // Node names headers in lower case and joins a repeated one (a malformed traceparent, then: ignored).
  const { traceparent, tracestate } = req.headers as { traceparent?: string; tracestate?: string };
  const span = startSpan(route?.operationId ?? UNMATCHED_SPAN, { kind: "server", ...(traceparent ? { continues: { traceparent, tracestate } } : {}), attributes });
  // No span when traces stopped meanwhile (a server of the process that closed them). It is ended
  // by the one listener every request has, on its response's "close" (./request-outcome.ts).
  if (span) res.locals.span = span;
  next();
}

/**
 * The request's span, when traced, from its response: for what sees the response only (the access
 * log, the error answer, the HTTP parser's refusal of a request the app had).
 */
export const spanOf = (res: object): Span | undefined => (res as { locals?: { span?: Span } }).locals?.span;

/** Ends the request's span on its response's "close", which follows "finish" when the answer was sent, and comes alone when the connection closed first. */
export function endRequestSpan(span: Span, res: Response): void {
  if (res.headersSent) span.setAttribute("http.response.status_code", res.statusCode);
  const reason = res.locals.errorReason as string | undefined;
  if (reason) span.setAttribute("error.type", reason);
  if (!res.writableFinished) span.fail("the connection closed before the answer was sent");
  else if (res.statusCode >= 500) span.fail(reason);
  span.end();
}
