// Refuses request values the databases cannot store as sent: text that core/storable-text refuses
// (NUL, unpaired surrogates), and numbers past the range of a double (JSON.parse turns 1e400 into
// Infinity, which serializes as null). Checked once for the parsed body and query, before the
// contract validator, so every operation gets the same 400, free-form values (a sample payload)
// included.
import type { NextFunction, Request, Response } from "express";
import { invalidField } from "../core/errors.js";
import { isStorableText, UNSTORABLE_TEXT } from "../core/storable-text.js";

const NUMBER_PROBLEM = "must not contain numbers beyond the range of a double (about 1.8e308)";

/** The path and problem of the first value (key or value) in `root` that is not storable, or undefined. */
function firstUnstorable(root: unknown, prefix: string): { path: string; problem: string } | undefined {
  // Iterative: a body may nest thousands of levels deep before the validator refuses it.
  const stack: [unknown, string][] = [[root, prefix]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      if (!isStorableText(value)) return { path, problem: UNSTORABLE_TEXT };
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) return { path, problem: NUMBER_PROBLEM };
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push([item, `${path}[${i}]`]));
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        if (!isStorableText(key)) return { path, problem: UNSTORABLE_TEXT };
        stack.push([item, `${path}.${key}`]);
      }
    }
  }
  return undefined;
}

export function storableText(req: Request, _res: Response, next: NextFunction): void {
  const found = firstUnstorable(req.body, "body") ?? firstUnstorable(req.query, "query");
  next(found === undefined ? undefined : invalidField(found.path, found.problem));
}
