// What marks the sandbox's answers and refuses its operations elsewhere (app.ts): the operations of
// the sandbox's services (svc.api.sandbox.v1), bound only on a server started as the sandbox.
import type { RequestHandler } from "express";
import type { ServiceHandlers } from "../../generated/server.js";
import { notFound } from "../core/errors.js";

/** The services of the sandbox (a name that is not one of the contract's fails the typecheck). */
export type SandboxService = Extract<keyof ServiceHandlers<unknown>, "SandboxClockService">;

export const isSandboxOnly = (operationId: string): boolean => operationId.startsWith("svc.api.sandbox.");

export const sandboxOnly = () => notFound("SANDBOX_ONLY", "the operation exists only in the sandbox");

/** Every answer, whatever its status, carries the sandbox's time as it is written (after an Advance, the moved time). */
export function sandboxTimeHeader(now: () => number): RequestHandler {
  return (_req, res, next) => {
    const writeHead = res.writeHead;
    res.writeHead = function (this: typeof res, ...args: Parameters<typeof writeHead>) {
      if (!res.headersSent) res.setHeader("Sandbox-Time", new Date(now()).toISOString());
      return writeHead.apply(this, args);
    } as typeof writeHead;
    next();
  };
}

