// The Express application: a thin layer that authenticates, validates against the contract,
// dispatches to the handler bound to each operation id, and renders every failure as the
// contract's error body. No domain rule lives here.
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import { handlerFor, operationRoutes, type OperationRequest, type ServiceHandlers } from "../../generated/server.js";
import { ApiError, GrpcCode, invalidArgument, notFound, permissionDenied } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { tracingOn } from "../core/spans.js";
import type { AccessTokens } from "../identity/access-tokens.js";
import { mayCall } from "../identity/roles.js";
import { accessLog } from "./access-log.js";
import { callerOf, type CommitAnswer, type RequestContext } from "./context.js";
import { CONSOLE_PATH, consoleRouter } from "./console.js";
import { contractValidation } from "./contract-validation.js";
import { DOCS_PATH, docsPage } from "./docs.js";
import { errorResponse } from "./error-response.js";
import { headAsGet } from "./head-as-get.js";
import { limitHeaderFields } from "./header-count.js";
import { IDEMPOTENCY_KEY_HEADER, type Idempotency } from "./idempotency.js";
import type { LockShedding } from "./lock-shedding.js";
import { leanJsonAnswers } from "./json-answer.js";
import { refuseQuery } from "./no-query.js";
import { narrowOneOfFailures } from "./one-of-issues.js";
import { parameterForm } from "./parameter-form.js";
import type { RateLimits } from "./rate-limit.js";
import { outputOnlyIgnored } from "./output-only.js";
import { JSON_LIMIT_BYTES, notingEmptyBody, rawBodyLimit, readRawBody, refuseDeclaredOversize, requiredBody, unlessBodyless, verifyJson, wholeRequest } from "./request-body.js";
import { requestId } from "./request-id.js";
import { isSandboxOnly, sandboxOnly, sandboxTimeHeader, type SandboxService } from "./sandbox-routes.js";
import { observeRequests, type RequestObserver } from "./request-outcome.js";
import { onAuthenticated, requestSpan, spanOf } from "./request-span.js";
import { RequestShapes } from "./request-shapes.js";
import { isRawPath, methodsAt, pathParametersOf, routeOf } from "./route-table.js";
import { series } from "./series.js";
import { storableText } from "./storable-request.js";
import { requireUtf8 } from "./strict-utf8.js";
import { malformedPath, unavailable } from "./to-api-error.js";

/** The handlers of every operation; the sandbox's own are there only on a server started as the sandbox. */
export type AppHandlers = Omit<ServiceHandlers<RequestContext>, SandboxService> & Partial<Pick<ServiceHandlers<RequestContext>, SandboxService>>;

export interface AppOptions {
  logger: Logger;
  handlers: AppHandlers;
  /** The sandbox's clock, on a server started as the sandbox: every answer carries its time (`Sandbox-Time`). */
  sandboxTime?: (() => number) | undefined;
  accessTokens: AccessTokens;
  /** Path of generated/openapi.yaml: validated against, and served at /openapi.yaml. */
  contractPath: string;
  /** Path of generated/docs.html, served at /docs. */
  docsPath: string;
  validateResponses: boolean;
  /** For /readyz: why this instance should not be sent traffic now (e.g. `database-unreachable`); none when ready. */
  unready: () => Promise<string[]>;
  /** Whether the server is shutting down: /readyz answers 503, so that load balancers send no more. */
  stopping: () => boolean;
  /** The built admin console (dist/console), served at /console. */
  consoleDir: string;
  /** Runs the requests of operations that take an Idempotency-Key once per caller and key. */
  idempotency: Idempotency;
  /** The rate limits per source address, credential and webhook listener. */
  rateLimits: RateLimits;
  /** Told of each request once answered, besides the access log (the metrics). */
  requestObservers?: readonly RequestObserver[];
  /** TRACE_CONTEXT_TRUSTED: the peers whose trace context a request that authenticated continues (request-span.ts). */
  traceContextTrusted: readonly string[];
  /** PostgreSQL with a lock_timeout: the operations answered 503 at once while a table they need is locked (lock-shedding.ts). */
  lockShedding?: LockShedding;
}

/** Sheds a request of an operation whose table is locked (lock-shedding.ts); a probe tells how it ended. */
function admitPastLocks(shedding: LockShedding, operationId: string, res: Response): void {
  const admission = shedding.admit(operationId);
  if (admission === "shed") throw unavailable(shedding.retryAfterSeconds);
  if (admission !== "probe") return;
  res.locals.lockProbe = true;
  // A probe that lost to lock_timeout is told of by the error answer (error-response.ts).
  res.once("close", () => res.locals.lostToLock === true || shedding.ended(operationId, false, true));
}

const FORM_LIMIT = "16kb";
export const TOKEN_PATH = "/auth/v1/token";

/** client_secret_post only: credentials in an Authorization header or the query string are refused. */
export function tokenEndpointGuard(req: Request, res: Response, next: NextFunction): void {
  res.locals.oauth = true;
  // RFC 6749 5.1: token answers, successful or not, are never cached.
  res.setHeader("Cache-Control", "no-store");
  if (req.get("authorization")) {
    next(invalidArgument("INVALID_REQUEST", "client credentials must be sent in the form body, not in an Authorization header"));
  } else if (Object.keys(req.query).length > 0) {
    next(invalidArgument("INVALID_REQUEST", "client credentials must be sent in the form body, not in the query string"));
  } else {
    next();
  }
}

/** Request headers by lower-case name, a repeated one joined with ", ", as raw handlers get them. */
export const joinedHeaders = (req: Request): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : v]));

/** A request no operation takes: 405 with `Allow` where the path has operations, else 404. */
function unroutable(path: string): ApiError {
  const allowed = methodsAt(path);
  if (allowed.length === 0) return notFound("ROUTE_NOT_FOUND", "no such route");
  return new ApiError(405, GrpcCode.UNIMPLEMENTED, "METHOD_NOT_ALLOWED", "the route does not accept this method", { headers: { Allow: allowed.join(", ") } });
}

/**
 * Runs the handler of the operation the route table matched (route-table.ts), found by its id: one
 * lookup, where an Express route per operation made every request try the routes' patterns in turn.
 */
function dispatchTo(handlers: ReadonlyMap<string, RequestHandler>): RequestHandler {
  return (req, res, next) => {
    const route = routeOf(req);
    const handle = route && handlers.get(route.operationId);
    if (!handle) return next();
    // Express gives each middleware its own (here empty) params: set the operation's again.
    const parameters = pathParametersOf(route, req.path);
    if (!parameters) return next(malformedPath());
    req.params = parameters;
    return handle(req, res, next);
  };
}

const peerOf = (req: Request): RequestContext["peer"] => ({ remoteAddress: req.socket.remoteAddress ?? "", forwardedFor: req.get("x-forwarded-for") });

/**
 * The steps every operation but the raw ones goes through, in order: the declared length, the parsers
 * (not for operations that take no body), a required body present, output-only fields dropped
 * (output-only.ts), the contract validator (HEAD seen as GET), the whole request (request-body.ts).
 * The mock (mock/front.ts) runs the same chain, so that it refuses what the server refuses, in the
 * same words. Parameters are checked as written before the validator coerces them; its failures are
 * narrowed to the arm a `oneOf` value chose before they are rendered.
 */
export function requestValidation(contractPath: string, validateResponses: boolean): RequestHandler {
  const shapes = RequestShapes.of(contractPath);
  return series(
    refuseDeclaredOversize,
    // inflate: false: a compressed body (any Content-Encoding) is 415, never decompressed.
    unlessBodyless(express.json({ limit: JSON_LIMIT_BYTES, type: ["application/json", "application/*+json"], verify: notingEmptyBody(verifyJson), inflate: false })),
    unlessBodyless(express.urlencoded({ extended: false, limit: FORM_LIMIT, parameterLimit: 20, verify: notingEmptyBody(requireUtf8), inflate: false })),
    requiredBody(shapes),
    outputOnlyIgnored(shapes),
    storableText(shapes),
    parameterForm(shapes),
    headAsGet(contractValidation({
      apiSpec: contractPath,
      // Parameters (query, path) are always coerced from their strings; bodies never are, so a number
      // sent where the contract wants a string (Money.units) or the reverse is a 400, not silently converted.
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false },
      validateResponses: validateResponses ? { allErrors: true } : false,
      validateSecurity: false,
      validateFormats: true,
      // The contract is validated by `npm run lint`; the meta-schema here refuses the relative tokenUrl the seed gives.
      validateApiSpec: false,
      ignorePaths: (path: string) => /^\/(healthz|readyz|docs|openapi\.yaml)$/.test(path) || isRawPath(path),
    })),
    narrowOneOfFailures(shapes),
    wholeRequest,
  );
}

export function createApp(options: AppOptions): Express {
  const { logger, handlers, accessTokens } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  leanJsonAnswers(app);

  if (options.sandboxTime) app.use(sandboxTimeHeader(options.sandboxTime));
  app.use(series(...(tracingOn() ? [requestSpan(options.traceContextTrusted)] : []), requestId, observeRequests([accessLog(logger), ...(options.requestObservers ?? [])]), limitHeaderFields));

  app.get("/healthz", (_req, res) => void res.json({ status: "ok" }));
  app.get("/readyz", async (_req, res, next) => {
    if (options.stopping()) return void res.status(503).json({ status: "stopping" });
    try {
      const reasons = await options.unready();
      if (reasons.length === 0) res.json({ status: "ready" });
      else res.status(503).json({ status: "unavailable", reasons });
    } catch (e) {
      next(e);
    }
  });
  app.get("/openapi.yaml", (_req, res) => res.type("application/yaml").sendFile(options.contractPath));
  app.get(DOCS_PATH, docsPage(options.docsPath));
  app.use(CONSOLE_PATH, consoleRouter(options.consoleDir));

  // Rate limits, authentication and roles come first, so a caller without access learns nothing
  // about shapes, and a caller over its limit costs no more work.
  app.use(async (req: Request, res: Response, next: NextFunction) => {
    const route = routeOf(req);
    if (!route) return next(unroutable(req.path));
    res.locals.operationId = route.operationId;
    // Not the sandbox: its operations are not bound, and say so before anything else.
    if (!options.sandboxTime && isSandboxOnly(route.operationId)) return next(sandboxOnly());
    try {
      options.rateLimits.admitSource(req, res);
      if (options.lockShedding) admitPastLocks(options.lockShedding, route.operationId, res);
      if (!route.secured) return next();
      const principal = await accessTokens.authenticate(req.get("authorization"), (credentialId) => options.rateLimits.admitCredential(credentialId, res));
      res.locals.principal = principal;
      onAuthenticated(res)?.();
      if (!mayCall(principal, route.operationId)) {
        throw permissionDenied("ROLE_NOT_ALLOWED", "the caller's role may not call this operation");
      }
      next();
    } catch (e) {
      next(e);
    }
  });

  // After the route is known, so its refusals are logged and published under the operation.
  app.use(TOKEN_PATH, tokenEndpointGuard);

  // Operations that take their body raw (the webhook intake signs its exact bytes) skip the parsers
  // and the contract validator: their handler checks everything, in the order the contract states.
  const rawHandlers = new Map<string, RequestHandler>();
  for (const route of operationRoutes) {
    if (!route.raw) continue;
    const handler = handlerFor(handlers as ServiceHandlers<RequestContext>, { ...route, raw: true as const });
    const limit = rawBodyLimit(route);
    rawHandlers.set(route.operationId, async (req: Request, res: Response, next: NextFunction) => {
      try {
        refuseQuery(req.originalUrl);
        const body = await handler(
          {
            path: req.params as never,
            headers: joinedHeaders(req),
            readBody: () => readRawBody(req, res, limit),
            remoteAddress: req.socket.remoteAddress ?? "",
            forwardedFor: req.get("x-forwarded-for"),
          },
          {
            requestId: res.locals.requestId as string,
            span: spanOf(res),
            peer: peerOf(req),
            intakeLimits: options.rateLimits.forIntake(req, res),
            intakeAuthenticatesWith: (method) => void (res.locals.webhookAuth = method),
            callerAuthenticated: onAuthenticated(res),
          },
        );
        res.status(200).json(body);
      } catch (e) {
        next(e);
      }
    });
  }
  app.use(dispatchTo(rawHandlers));

  app.use(requestValidation(options.contractPath, options.validateResponses));

  const validatedHandlers = new Map<string, RequestHandler>();
  for (const route of operationRoutes) {
    if (route.raw || !handlers[route.service]) continue;
    const handler = handlerFor(handlers as ServiceHandlers<RequestContext>, { ...route, raw: false as const });
    validatedHandlers.set(route.operationId, async (req: Request, res: Response, next: NextFunction) => {
      try {
        const request = { path: req.params, query: req.query, body: req.body } as unknown as OperationRequest<typeof route.operationId>;
        const requestId = res.locals.requestId as string;
        const principal = res.locals.principal as RequestContext["principal"];
        const ctx: RequestContext = { requestId, principal, actor: principal && { kind: "user", userId: principal.userId, credentialId: principal.credentialId, requestId }, span: spanOf(res), peer: peerOf(req), callerAuthenticated: onAuthenticated(res) };
        const execute = (commitAnswer?: CommitAnswer) => handler(request as never, commitAnswer ? { ...ctx, commitAnswer } : ctx);
        if (route.idempotencyKey !== null && req.get(IDEMPOTENCY_KEY_HEADER) !== undefined) {
          await options.idempotency.respond(req, res, route.operationId, callerOf(ctx).userId, execute, ctx);
        } else {
          res.status(200).json(await execute());
        }
      } catch (e) {
        next(e);
      }
    });
  }
  app.use(dispatchTo(validatedHandlers));

  app.use(errorResponse(logger, options.lockShedding));
  return app;
}
