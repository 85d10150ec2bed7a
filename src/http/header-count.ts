// Node's HTTP parser keeps the first 2,000 header fields of a request and drops the rest without a
// word, so a field sent after them (an Authorization, say) would go unseen. The server keeps every
// field (maxHeadersCount 0; the 16 KB limit on the header section still bounds them) and refuses a
// request with more fields than any client sends, 431 like a header section over 16 KB.
import type { NextFunction, Request, Response } from "express";
import { ApiError, GrpcCode } from "../core/errors.js";

export const MAX_HEADER_FIELDS = 200;

export function limitHeaderFields(req: Request, _res: Response, next: NextFunction): void {
  // rawHeaders alternates names and values.
  if (req.rawHeaders.length / 2 <= MAX_HEADER_FIELDS) return next();
  next(new ApiError(431, GrpcCode.INVALID_ARGUMENT, "HEADERS_TOO_LARGE", `the request has more than ${MAX_HEADER_FIELDS} header fields`));
}
