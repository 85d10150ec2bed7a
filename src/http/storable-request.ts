// Refuses request values the databases cannot store as sent, or the answers could not carry
// (core/storable-value): in a body, text that core/storable-text refuses in a text field (control
// characters but tab and newline, NUL, unpaired surrogates) except where the contract takes any JSON
// value (a sample payload: there only NUL and unpaired surrogates); in the query, NUL and unpaired
// surrogates; anywhere, numbers past the range of a double. Checked once for the parsed body and
// query, before the contract validator, so every operation gets the same 400.
import type { NextFunction, Request, Response } from "express";
import { invalidField } from "../core/errors.js";
import { DATA, FIELDS, firstUnstorable } from "../core/storable-value.js";
import type { RequestShapes } from "./request-shapes.js";
import { routeOf } from "./route-table.js";

export function storableText(shapes: RequestShapes) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const route = routeOf(req);
    const body = (route && shapes.operation(route.operationId)?.body?.text) ?? FIELDS;
    const found = firstUnstorable(req.body, "body", body) ?? firstUnstorable(req.query, "query", DATA);
    next(found === undefined ? undefined : invalidField(found.path, found.problem));
  };
}
