// express-openapi-validator finds a request's operation by compiling and trying the path pattern
// of every route of the contract on every request (lookupRoute in its openapi.metadata.js): a tenth
// of a small GET's CPU in the bench profiles. The route table (route-table.ts) has matched the
// request already, so the validator's metadata middleware runs once per operation; later requests
// of the operation get the metadata it found, with their own path parameters, decoded as it decodes
// them. Anything the table does not match (the mock lets unroutable requests through to the
// validator's 404 and 405), and a parameter that is not valid percent-encoding (the validator's 400),
// still goes through the validator's own lookup.
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
