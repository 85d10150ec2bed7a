// The validator's metadata middleware runs once per operation (src/http/route-metadata.ts); later
// requests of it get the same metadata with their own path parameters.
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { describe, expect, it } from "vitest";
import { rememberRouteMetadata } from "../../../src/http/route-metadata.js";

type Seen = Request & { openapi?: { pathParams: Record<string, string>; schema: unknown } };

/** A stand-in for the validator's lookup: counts its calls, and sets what it would from the path. */
function countingLookup(): { calls: string[]; middleware: RequestHandler } {
  const calls: string[] = [];
  const schema = { operationId: "the operation" };
  const middleware: RequestHandler = (req: Seen, _res: Response, next: NextFunction) => {
    calls.push(req.path);
    const [, , , , , userId, appId] = req.path.split("/");
    req.openapi = { pathParams: { user_id: userId!, app_id: appId! }, schema };
    next();
  };
  return { calls, middleware };
}

const request = (method: string, path: string): Seen => ({ method, path, params: {} }) as unknown as Seen;

function run(handler: RequestHandler, req: Seen): unknown {
  let error: unknown = "next not called";
  handler(req, {} as Response, (err?: unknown) => void (error = err));
  return error;
}

describe("the validator's route metadata, remembered per operation", () => {
  it("looks an operation up once; later requests get its metadata with their own decoded path parameters", () => {
    const lookup = countingLookup();
    const remembered = rememberRouteMetadata(lookup.middleware);
    const first = request("GET", "/api/v1/funds/subject-app-limits/u1/app-1");
    const second = request("GET", "/api/v1/funds/subject-app-limits/u%202/app%2F2");
    const head = request("HEAD", "/api/v1/funds/subject-app-limits/u3/app-3");
    for (const req of [first, second, head]) expect(run(remembered, req)).toBeUndefined();
    expect(lookup.calls).toEqual(["/api/v1/funds/subject-app-limits/u1/app-1"]);
    expect(second.openapi?.pathParams).toEqual({ user_id: "u 2", app_id: "app/2" });
    expect(second.params).toEqual({ user_id: "u 2", app_id: "app/2" });
    expect(head.openapi?.pathParams).toEqual({ user_id: "u3", app_id: "app-3" });
    expect(second.openapi?.schema).toBe(first.openapi?.schema);
    // Another operation is looked up on its own.
    run(remembered, request("GET", "/api/v1/funds/subject-app-limits/u1/app-1/effective"));
    expect(lookup.calls).toHaveLength(2);
  });

  it("leaves to the validator what the route table does not match and what does not decode", () => {
    const lookup = countingLookup();
    const remembered = rememberRouteMetadata(lookup.middleware);
    run(remembered, request("GET", "/api/v1/funds/subject-app-limits/u1/app-1"));
    run(remembered, request("GET", "/API/v1/funds/subject-app-limits/u1/app-1"));
    run(remembered, request("GET", "/api/v1/funds/subject-app-limits/u1/%c0%af"));
    expect(lookup.calls).toHaveLength(3);
  });

});
