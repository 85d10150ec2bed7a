// Refuses request values the databases cannot store as sent (core/storable-value): text that
// core/storable-text refuses (NUL, unpaired surrogates), and numbers past the range of a double.
// Checked once for the parsed body and query, before the contract validator, so every operation gets
// the same 400, free-form values (a sample payload) included.
import type { NextFunction, Request, Response } from "express";
import { invalidField } from "../core/errors.js";
import { firstUnstorable } from "../core/storable-value.js";

export function storableText(req: Request, _res: Response, next: NextFunction): void {
  const found = firstUnstorable(req.body, "body", { text: true }) ?? firstUnstorable(req.query, "query", { text: true });
  next(found === undefined ? undefined : invalidField(found.path, found.problem));
}
