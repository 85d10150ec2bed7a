// src/http/series.ts runs middlewares as one Express layer, as Express would run them one by one.
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from "express";
import { describe, expect, it } from "vitest";
import { series, type Step } from "../../../src/http/series.js";

/** Runs `steps` as a series on a request of its own; answers what each step saw and what the series ended with. */
async function run(...steps: Step[]): Promise<{ seen: string[]; ended: unknown }> {
  const seen: string[] = [];
  const req = { seen } as unknown as Request;
  const ended = await new Promise<unknown>((resolve) => series(...steps)(req, {} as Response, (err?: unknown) => resolve(err ?? "no error")));
  return { seen, ended };
}

const step =
  (name: string, act: (next: NextFunction) => unknown = (next) => next()): RequestHandler =>
  (req, _res, next) => {
    (req as unknown as { seen: string[] }).seen.push(name);
    return act(next) as void;
  };

const onError =
  (name: string, act: (err: unknown, next: NextFunction) => unknown = (err, next) => next(err)): ErrorRequestHandler =>
  (err, req, _res, next) => {
    (req as unknown as { seen: string[] }).seen.push(`${name}(${String(err)})`);
    return act(err, next) as void;
  };

describe("middlewares in series", () => {
  it("runs the steps in order, skipping error middlewares, and ends with the outer next", async () => {
    expect(await run(step("a"), onError("e"), step("b"))).toEqual({ seen: ["a", "b"], ended: "no error" });
  });

  it("skips to the next error middleware on next(err), a throw or a rejected promise, which may pass it on or handle it", async () => {
    expect(await run(step("a", (next) => next("boom")), step("b"), onError("e"), step("c"))).toEqual({ seen: ["a", "e(boom)"], ended: "boom" });
    expect(await run(step("a", () => { throw "thrown"; }), step("b"), onError("e", (_err, next) => next()), step("c"))).toEqual({ seen: ["a", "e(thrown)", "c"], ended: "no error" });
    expect(await run(step("a", async () => Promise.reject("rejected")), step("b"), onError("e"))).toEqual({ seen: ["a", "e(rejected)"], ended: "rejected" });
  });

  it("treats a falsy error as none, as Express does, and ends with an error no step handled", async () => {
    expect(await run(step("a", (next) => next(null)), onError("e"), step("b"))).toEqual({ seen: ["a", "b"], ended: "no error" });
    expect(await run(step("a", (next) => next("late")), step("b"))).toEqual({ seen: ["a"], ended: "late" });
  });

  it("stops where a step answers without calling next", async () => {
    const stopped = series(step("a", () => undefined), step("b"));
    const seen: string[] = [];
    let ended = false;
    stopped({ seen } as unknown as Request, {} as Response, () => void (ended = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect({ seen, ended }).toEqual({ seen: ["a"], ended: false });
  });
});
