// How the API takes request bodies, beside the parsers (app.ts): the body limits (a Content-Length
// over one is refused before any byte is read), the raw bodies of the `x-raw-request` operations, the
// checks of a JSON body's bytes before they are parsed, and two rules of the whole request: an
// operation runs only on a request that arrived whole (a body no parser read is read and dropped
// first), and a body the contract requires is there (an empty one is refused, where the JSON parser
// would read `{}`). docs/partners.md, "Conventions of the API".
import type { NextFunction, Request, RequestHandler, Response } from "express";
import getRawBody from "raw-body";
import { checkJsonBytes, checkJsonCharset, malformedBody } from "../core/json-body.js";
import { wasRefused } from "./client-error.js";
import type { RequestShapes } from "./request-shapes.js";
import { routeOf } from "./route-table.js";
import { payloadTooLarge } from "./to-api-error.js";

/** The body limit of every operation but those with an `x-max-body-bytes` of their own. */
export const JSON_LIMIT_BYTES = 256 * 1024;

/** The body limit of a raw operation: its x-max-body-bytes, else the JSON limit. */
export const rawBodyLimit = (route: { maxBodyBytes?: number | null }): number => route.maxBodyBytes ?? JSON_LIMIT_BYTES;

/** Reads a body up to `limit` bytes; past it, answers 413 without reading further and closes the connection. */
export async function readRawBody(req: Request, res: Response, limit: number): Promise<Buffer> {
  try {
    return await getRawBody(req, { limit, length: req.get("content-length") });
  } catch (e) {
    // Unless the HTTP parser's refusal already answered (the body's framing broke as it was read).
    if (!res.headersSent) res.setHeader("Connection", "close");
    throw e;
  }
}

/** The methods of the operations that take no body (no GET or DELETE operation of the contract has one). */
const BODYLESS_METHODS = new Set(["GET", "HEAD", "DELETE"]);

/** `parser`, skipped where the operation takes no body: a body it is sent is only read to its end (wholeRequest). */
export const unlessBodyless =
  (parser: RequestHandler): RequestHandler =>
  (req, res, next) =>
    BODYLESS_METHODS.has(req.method) ? next() : parser(req, res, next);

/** The parsers' `verify` hook for JSON: core/json-body's rule, before the bytes are decoded. */
export function verifyJson(req: Request, _res: Response, body: Buffer): void {
  checkJsonCharset(req.get("content-type"));
  checkJsonBytes(body);
}

type Verify = (req: Request, res: Response, body: Buffer, encoding: string) => void;

/** Requests whose body a parser read as no bytes (noted by its `verify` hook). */
const emptyBodies = new WeakSet<Request>();

/** A parser's `verify` hook that first notes a body of no bytes, for `requiredBody`. */
export const notingEmptyBody =
  (verify: Verify): Verify =>
  (req, res, body, encoding) => {
    if (body.length === 0) emptyBodies.add(req);
    verify(req, res, body, encoding);
  };

/** The media type of a Content-Type header: lower-case, without parameters. */
export const mediaTypeOf = (header: string): string => (header.split(";", 1)[0] ?? "").trim().toLowerCase();

/**
 * 400 MALFORMED_BODY where the contract requires a body and the request has none: no bytes (no
 * `Content-Length` or `Transfer-Encoding` at all, `Content-Length: 0`, a chunked body without data)
 * in the media type the operation takes (in any other, the validator's 415 stands). The JSON parser
 * reads no bytes as `{}`, which would pass for a body that leaves every field out: a Capture sent
 * without its body would capture the whole hold. Where a body is optional (no operation's is yet), an
 * empty one is left to the parsers, as before.
 */
export function requiredBody(shapes: RequestShapes): RequestHandler {
  return (req, _res, next) => {
    const route = routeOf(req);
    const body = route && shapes.operation(route.operationId)?.body;
    if (!body?.required || mediaTypeOf(req.get("content-type") ?? "") !== body.mediaType) return next();
    const framed = req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined;
    next(!framed || emptyBodies.has(req) ? malformedBody("is empty") : undefined);
  };
}

/** 413 for a Content-Length over the JSON limit, before the body is read; the connection is closed. */
export function refuseDeclaredOversize(req: Request, _res: Response, next: NextFunction): void {
  const declared = Number(req.get("content-length") ?? 0);
  next(declared > JSON_LIMIT_BYTES ? payloadTooLarge({ Connection: "close" }) : undefined);
}

/**
 * The last step before an operation runs: a request the HTTP parser refused goes no further (its
 * answer is sent), and a body no parser read (one an operation without a body was sent) is read to
 * its end, within the JSON limit, so that the operation runs only on a request that arrived whole.
 */
export async function wholeRequest(req: Request, res: Response, next: NextFunction): Promise<void> {
  if (wasRefused(req)) return;
  if (req.complete) return next();
  try {
    await readRawBody(req, res, JSON_LIMIT_BYTES);
  } catch (e) {
    return next(e);
  }
  next();
}
