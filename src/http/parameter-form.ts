// Query parameters and form fields as the contract means them, checked before the validator (which
// would coerce them): a query written as RFC 3986 (3.4) allows, reserved characters included, and
// nothing decoded leniently; a declared parameter or field given at most once (a repeat is ambiguous;
// RFC 6749 3.1 says so of the token request); an integer in plain decimal digits, where the validator
// turns `Infinity`, `0x10`, `1e2` or ` 5` into numbers. docs/partners.md, "Conventions of the API".
import type { NextFunction, Request, Response } from "express";
import { invalidField } from "../core/errors.js";
import type { RequestShapes, SchemaNode } from "./request-shapes.js";
import { routeOf } from "./route-table.js";

/** An optional minus sign and digits, without leading zeros (`0` alone is zero; `-0` is refused). */
const DECIMAL_INTEGER = /^(0|-?[1-9][0-9]*)$/;

/** One `name=value` of a query as RFC 3986 lets it be written: unreserved and sub-delims characters (`&` separates), `:`, `@`, `/`, `?`, and `%` with two hex digits. */
const QUERY_PAIR = /^(?:[A-Za-z0-9\-._~!$'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*$/;

export const GIVEN_ONCE = "must be given once";
export const PERCENT_ENCODED_UTF8 = "must be percent-encoded UTF-8";
export const DECIMAL_INTEGER_FORM = "must be an integer in decimal digits, such as 25";

const isInteger = (schema: SchemaNode): boolean => schema.type === "integer";

/** `text` percent-decoded (`+` a space), or undefined where the bytes are not UTF-8. */
function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    return undefined;
  }
}

/**
 * The field of the first pair of `query` (as sent, undecoded) that RFC 3986 does not allow or that is
 * not percent-encoded UTF-8: `query.<name>` for a parameter the operation declares, else `query`
 * (a name it does not declare is not repeated back).
 */
function malformedQueryField(query: string, declared: ReadonlyMap<string, unknown>): string | undefined {
  for (const pair of query.split("&")) {
    const name = decoded(pair.split("=", 1)[0]!);
    if (QUERY_PAIR.test(pair) && name !== undefined && decoded(pair) !== undefined) continue;
    return name !== undefined && declared.has(name) ? `query.${name}` : "query";
  }
  return undefined;
}

export function parameterForm(shapes: RequestShapes) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const route = routeOf(req);
    const shape = route && shapes.operation(route.operationId);
    if (!shape) return next();
    const at = req.originalUrl.indexOf("?");
    const malformed = at < 0 ? undefined : malformedQueryField(req.originalUrl.slice(at + 1), shape.query);
    if (malformed !== undefined) return next(invalidField(malformed, PERCENT_ENCODED_UTF8));
    const query = req.query as Record<string, unknown>;
    for (const [name, schema] of shape.query) {
      const value = query[name];
      if (Array.isArray(value)) return next(invalidField(`query.${name}`, GIVEN_ONCE));
      if (typeof value === "string" && isInteger(schema) && !DECIMAL_INTEGER.test(value)) return next(invalidField(`query.${name}`, DECIMAL_INTEGER_FORM));
    }
    if (shape.body?.mediaType === "application/x-www-form-urlencoded" && req.is("application/x-www-form-urlencoded")) {
      const fields = Object.keys((shape.body.schema.properties ?? {}) as SchemaNode);
      const repeated = fields.find((name) => Array.isArray((req.body as Record<string, unknown> | undefined)?.[name]));
      if (repeated !== undefined) return next(invalidField(`body.${repeated}`, GIVEN_ONCE));
    }
    next();
  };
}
