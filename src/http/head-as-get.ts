// HEAD on a path with a GET operation is that operation (RFC 9110 9.3.2): the same checks, status
// and headers, Content-Length included, without the body (Node sends none for HEAD). Routing
// (route-table.ts) and Express already take HEAD for GET; the contract validator knows only the
// contract's methods, so its middlewares see HEAD as GET.
import type { NextFunction, Request, RequestHandler, Response } from "express";

/** `middleware` run on a HEAD request as on the GET request it stands for. */
export const headAsGet =
  (middleware: RequestHandler): RequestHandler =>
  (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== "HEAD") return middleware(req, res, next);
    req.method = "GET";
    const restore = () => void (req.method = "HEAD");
    try {
      return middleware(req, res, (err?: unknown) => {
        restore();
        next(err);
      });
    } catch (e) {
      restore();
      throw e;
    }
  };
