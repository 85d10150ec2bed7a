// A span per request when traces are on (src/core/spans.ts): of kind SERVER, named by the contract's
// operation id, with bounded attributes that name nothing the caller sent. A caller's `traceparent`
// is continued only from a peer TRACE_CONTEXT_TRUSTED names, for a request that authenticated, so its
// span starts late (core/deferred-span.ts); any other request starts a trace of its own, linked to
// the caller's span. The span goes with the request (res.locals.span) to the services as the Origin
// of their changes. Why: docs/operating.md, "Traces".
import type { NextFunction, Request, Response } from "express";
import { DeferredSpan } from "../core/deferred-span.js";
import { startSpan, type AttributeValue, type Span } from "../core/spans.js";
import { inAddressRanges } from "../core/ip-address.js";
import { routeOf } from "./route-table.js";

/** The span name of a request no operation of the contract takes: 404 and 405 answers, /healthz, /readyz, /docs, the console. */
export const UNMATCHED_SPAN = "http.unmatched";

/** `trusted`: the CIDRs of the peers whose trace context an authenticated request continues. */
export function requestSpan(trusted: readonly string[]) {
  const isTrusted = inAddressRanges(trusted);
  return (req: Request, res: Response, next: NextFunction): void => {
    const route = routeOf(req);
    const name = route?.operationId ?? UNMATCHED_SPAN;
    const attributes: Record<string, AttributeValue> = { "http.request.method": req.method };
    if (route) attributes["http.route"] = route.path;
    // Node names headers in lower case and joins a repeated one (a malformed traceparent, then: ignored).
    const { traceparent, tracestate } = req.headers as { traceparent?: string; tracestate?: string };
    let span: Span | undefined;
    if (!traceparent || !isTrusted(req.socket.remoteAddress)) {
      span = startSpan(name, { kind: "server", linked: traceparent, attributes });
    } else {
      let authenticated = false;
      const deferred = new DeferredSpan((startTime) =>
        startSpan(name, authenticated ? { kind: "server", continues: { traceparent, tracestate }, startTime, attributes } : { kind: "server", linked: traceparent, startTime, attributes }),
      );
      res.locals.callerAuthenticated = () => {
        authenticated = true;
        deferred.start();
      };
      span = deferred;
    }
    // No span when traces stopped meanwhile (a server of the process that closed them). It is ended
    // by the one listener every request has, on its response's "close" (./request-outcome.ts).
    if (span) res.locals.span = span;
    next();
  };
}

/**
 * What to tell once the request's caller authenticated, when its span may then continue the
 * caller's trace (a trusted peer sent one); undefined otherwise.
 */
export const onAuthenticated = (res: Response): (() => void) | undefined => res.locals.callerAuthenticated as (() => void) | undefined;

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
