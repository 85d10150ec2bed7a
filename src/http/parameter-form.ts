// Query parameters and form fields as the contract means them, checked before the validator (which
// would coerce them): a declared parameter or field is given at most once (a repeat is ambiguous;
// RFC 6749 3.1 says so of the token request), and an integer parameter is written in plain decimal
// digits. The validator turns `Infinity`, `0x10`, `1e2` or ` 5` into numbers; here they are 400, and
// every integer so written is accepted whatever its size (page_size clamps it, see core/pagination).
import type { NextFunction, Request, Response } from "express";
import { invalidField } from "../core/errors.js";
import type { RequestShapes, SchemaNode } from "./request-shapes.js";
import { routeOf } from "./route-table.js";

/** An optional minus sign and digits, without leading zeros (`0` alone is zero; `-0` is refused). */
const DECIMAL_INTEGER = /^(0|-?[1-9][0-9]*)$/;

export const GIVEN_ONCE = "must be given once";
export const DECIMAL_INTEGER_FORM = "must be an integer in decimal digits, such as 25";

const isInteger = (schema: SchemaNode): boolean => schema.type === "integer";

export function parameterForm(shapes: RequestShapes) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const route = routeOf(req);
    const shape = route && shapes.operation(route.operationId);
    if (!shape) return next();
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
