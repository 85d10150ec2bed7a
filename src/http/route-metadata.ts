// express-openapi-validator finds a request's operation by trying the path pattern of every route of
// the contract (lookupRoute). The route table (route-table.ts) has matched the request already, so the
// validator's metadata step runs once per operation, and later requests get the metadata it found with
// their own path parameters. What the table does not match (the mock's unroutable requests) and a path
// that is not valid percent-encoding go the validator's way. Why: bench/RESULTS.md, "The request path
// every operation pays".
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { pathParametersOf, routeOf } from "./route-table.js";

/** What the validator's metadata step sets as `req.openapi` (express-openapi-validator 5), as read here. */
export interface OpenApiMetadata {
  expressRoute: string;
  pathParams: Record<string, string>;
  [field: string]: unknown;
}

export type WithMetadata = Request & { openapi?: OpenApiMetadata };

/** `metadata` (the validator's metadata middleware) run once per operation, its answer reused. */
export function rememberRouteMetadata(metadata: RequestHandler): RequestHandler {
  const known = new Map<string, Omit<OpenApiMetadata, "pathParams">>();
  return (req: WithMetadata, res: Response, next: NextFunction) => {
    const route = routeOf(req);
    const pathParams = route && pathParametersOf(route, req.path);
    if (!route || !pathParams) return metadata(req, res, next);
    const remembered = known.get(route.operationId);
    if (remembered) {
      req.openapi = { ...remembered, pathParams } as OpenApiMetadata;
      req.params = pathParams;
      return next();
    }
    return metadata(req, res, (err?: unknown) => {
      if (err === undefined && req.openapi) {
        const { pathParams: _own, ...shared } = req.openapi;
        known.set(route.operationId, shared);
      }
      next(err);
    });
  };
}
