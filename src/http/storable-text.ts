// Refuses request text the databases cannot store as sent: NUL characters (PostgreSQL text cannot
// hold them: the insert fails, a 500) and unpaired surrogates (valid in JSON escapes, not in
// UTF-8: both drivers would store U+FFFD instead, text the client never sent). Checked once for
// the parsed body and query, before the contract validator, so every operation gets the same 400.
import type { NextFunction, Request, Response } from "express";
import { invalidField } from "../core/errors.js";

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const storable = (s: string) => !s.includes("\u0000") && !UNPAIRED_SURROGATE.test(s);

/** The path of the first string (key or value) in `root` that is not storable, or undefined. */
function firstUnstorable(root: unknown, prefix: string): string | undefined {
  // Iterative: a body may nest thousands of levels deep before the validator refuses it.
  const stack: [unknown, string][] = [[root, prefix]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      if (!storable(value)) return path;
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push([item, `${path}[${i}]`]));
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        if (!storable(key)) return path;
        stack.push([item, `${path}.${key}`]);
      }
    }
  }
  return undefined;
}

export function storableText(req: Request, _res: Response, next: NextFunction): void {
  const field = firstUnstorable(req.body, "body") ?? firstUnstorable(req.query, "query");
  next(field === undefined ? undefined : invalidField(field, "must not contain NUL characters or unpaired surrogates"));
}
