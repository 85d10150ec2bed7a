// The mock's HTTP layer, in front of Prism. It runs the server's own request chain (request ids, the
// token endpoint's guard, the bearer token's presence and shape, the webhook intake's checks that need
// no listener, the body parsers and the contract validator, the error body), so that the mock refuses
// what the server refuses with the same status, reason and message; what passes goes to Prism, whose
// example-based answer comes back (prism-answer.ts). What it cannot check is listed in docs/partners.md "Mock".
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { operationRoutes } from "../generated/server.js";
import { systemClock } from "../src/core/clock.js";
import type { Logger } from "../src/core/logger.js";
import { contractPath } from "../src/core/package-root.js";
import { joinedHeaders, requestValidation, TOKEN_PATH, tokenEndpointGuard } from "../src/http/app.js";
import { errorResponse } from "../src/http/error-response.js";
import { refuseQuery } from "../src/http/no-query.js";
import { rawBodyLimit, readRawBody } from "../src/http/request-body.js";
import { requestId } from "../src/http/request-id.js";
import { expressPath, findRoute } from "../src/http/route-table.js";
import { bearerAccessToken } from "../src/identity/access-tokens.js";
import { checkGrantRequest } from "../src/identity/client-credentials-grant.js";
import { readDelivery } from "../src/webhooks/deliveries.js";
import { GITHUB_HEADERS } from "../src/webhooks/github.js";
import type { HeaderBag } from "../src/webhooks/headers.js";
import { SIGNATURE_HEADER } from "../src/webhooks/hmac.js";
import { bearerToken } from "../src/webhooks/jwt.js";
import type { IntakeRoute } from "../src/webhooks/listener-kinds.js";
import { signatureHeader } from "../src/webhooks/signature-match.js";
import { STANDARD_WEBHOOK_HEADERS } from "../src/webhooks/standard-webhooks.js";
import { STRIPE_SIGNATURE_HEADER } from "../src/webhooks/stripe.js";
import { asLastPage } from "./last-page.js";
import { prismRefusal } from "./prism-answer.js";
import { preferForPrism } from "./prefer.js";

/** The intake's operations, each with its sender's kind and signature header. */
const INTAKES: Record<string, { route: IntakeRoute; kind: "hmac" | "standardWebhooks" | "github" | "stripe"; signature: string }> = {
  "svc.api.webhooks.v1.IncomingWebhookService.Receive": { route: "seed", kind: "hmac", signature: SIGNATURE_HEADER },
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStandardWebhook": { route: "standardWebhooks", kind: "standardWebhooks", signature: STANDARD_WEBHOOK_HEADERS.signature },
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveGithubWebhook": { route: "github", kind: "github", signature: GITHUB_HEADERS.signature },
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStripeWebhook": { route: "stripe", kind: "stripe", signature: STRIPE_SIGNATURE_HEADER },
};

// Hop-by-hop headers and those fetch sets itself; Accept-Encoding is dropped so Prism answers plain bytes.
const NOT_FORWARDED = new Set(["host", "connection", "keep-alive", "transfer-encoding", "content-length", "accept-encoding", "upgrade", "expect"]);

/**
 * The intake's checks that need no listener, in the intake's order: the kind's headers and the JSON
 * body, then the sender's authentication present and well formed. At the seed's URL a bearer JWT
 * without a signature is a JWT listener's sender; anything else must carry a signature. None can
 * be verified here.
 */
function checkIntake(intake: (typeof INTAKES)[string], headers: HeaderBag, body: Buffer): void {
  readDelivery(intake.kind, headers, body, systemClock);
  const signature = headers[intake.signature.toLowerCase()];
  const authorization = headers.authorization;
  if (intake.route === "seed" && signature === undefined && typeof authorization === "string") bearerToken(authorization);
  else signatureHeader(signature, intake.signature);
}

/** The validated body as bytes again, in the request's own media type (the parsers consumed the stream). */
function reserialized(req: Request): string | undefined {
  if (req.body === undefined) return undefined;
  if (req.is("application/x-www-form-urlencoded")) return new URLSearchParams(req.body as Record<string, string>).toString();
  return JSON.stringify(req.body);
}

export function createMockApp(options: { prismUrl: string; logger: Logger }): Express {
  /** Sends the request for `operationId` to Prism; a success goes back as Prism gave it, a refusal is thrown as an ApiError. */
  async function relay(operationId: string, req: Request, res: Response, body: Buffer | string | undefined): Promise<void> {
    const headers = new Headers();
    for (const [name, value] of Object.entries(joinedHeaders(req))) if (value !== undefined && !NOT_FORWARDED.has(name)) headers.set(name, value);
    const prefer = headers.get("prefer");
    if (prefer !== null) headers.set("prefer", preferForPrism(prefer, operationId));
    // HEAD is the GET operation; Express drops the body of the answer.
    const method = req.method === "HEAD" ? "GET" : req.method;
    const answer = await fetch(options.prismUrl + req.originalUrl, { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await answer.text();
    if (answer.status >= 400) throw prismRefusal(answer.status, answer.headers, text, req.get("prefer") !== undefined);
    // A GET list's page token is in its query, a search's in its body.
    const pageToken = req.query.page_token ?? (req.body as { pageToken?: unknown } | undefined)?.pageToken;
    res.status(answer.status).type(answer.headers.get("content-type") ?? "application/json").send(asLastPage(text, pageToken));
  }

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(requestId);
  app.get("/healthz", (_req, res) => void res.json({ status: "ok" }));
  app.use(TOKEN_PATH, tokenEndpointGuard);
  // The bearer token: present and JWT-shaped. Any such token is accepted; who it names is not known here.
  app.use((req: Request, _res: Response, next: NextFunction) => {
    if (findRoute(req.method, req.path)?.secured) {
      try {
        bearerAccessToken(req.get("authorization"));
      } catch (e) {
        return next(e);
      }
    }
    next();
  });

  for (const route of operationRoutes) {
    const intake = INTAKES[route.operationId];
    if (!intake) continue;
    app.post(expressPath(route.path), async (req: Request, res: Response, next: NextFunction) => {
      try {
        refuseQuery(req.originalUrl);
        const body = await readRawBody(req, res, rawBodyLimit(route));
        checkIntake(intake, joinedHeaders(req), body);
        await relay(route.operationId, req, res, body);
      } catch (e) {
        next(e);
      }
    });
  }

  app.use(requestValidation(contractPath, false));
  // The token request's grant type and scope, checked as the server checks them; the client is not known here.
  app.post(TOKEN_PATH, (req: Request, _res: Response, next: NextFunction) => {
    try {
      checkGrantRequest(req.body as { grant_type: string; scope?: string });
      next();
    } catch (e) {
      next(e);
    }
  });
  for (const route of operationRoutes) {
    if (route.raw) continue;
    app[route.method](expressPath(route.path), (req: Request, res: Response, next: NextFunction) => relay(route.operationId, req, res, reserialized(req)).catch(next));
  }
  app.use(errorResponse(options.logger));
  return app;
}
