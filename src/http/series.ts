// Several middlewares as one Express layer. Every layer Express tries costs a request its matching and
// dispatch, and a chain of steps that every request runs in order needs none of that: here they run in
// turn, as Express would run them (an error skips to the next error middleware, a thrown error or a
// rejected promise is an error), and the series ends by calling the outer `next`, with the error if one
// is left unhandled. Why: bench/RESULTS.md, "The request path every operation pays".
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from "express";

export type Step = RequestHandler | ErrorRequestHandler;

/** Whether a middleware takes an error first: Express tells them apart by their four parameters. */
const handlesErrors = (step: Step): step is ErrorRequestHandler => step.length === 4;

export function series(...steps: Step[]): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    let at = 0;
    const next = (err?: unknown): void => {
      let step: Step | undefined;
      // Express's rule: a falsy error is none.
      while ((step = steps[at++]) !== undefined && Boolean(err) !== handlesErrors(step));
      if (!step) return done(err);
      try {
        const returned: unknown = handlesErrors(step) ? step(err, req, res, next) : step(req, res, next);
        if (returned instanceof Promise) returned.catch((e: unknown) => next(e ?? new Error("a middleware's promise was rejected without a reason")));
      } catch (e) {
        next(e);
      }
    };
    next();
  };
}
