// Gives every request an id: the caller's `X-Request-Id` when it is well formed, else a new one.
import { randomUUID } from "node:crypto";
import type { NextFunction, Request, Response } from "express";

const CALLER_ID = /^[A-Za-z0-9._-]{1,128}$/;

export function requestId(req: Request, res: Response, next: NextFunction): void {
  const given = req.get("x-request-id");
  const id = given && CALLER_ID.test(given) ? given : randomUUID();
  res.locals.requestId = id;
  res.setHeader("X-Request-Id", id);
  next();
}
