// src/http/route-table.ts finds a request's path template among the routes of its segment count,
// concrete paths first, then the template's operation of its method: here against a scan of every
// route (the most concrete template matching, first in the contract's order among equals, then its
// method), for every route's own path with sample parameters, and for paths no route takes.
import { describe, expect, it } from "vitest";
import { operationRoutes } from "../../../generated/server.js";
import { findRoute, methodsAt } from "../../../src/http/route-table.js";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** A path's segments as literal (0) or parameter (1): a concrete path's shape sorts before a templated one's. */
const shape = (path: string) => path.split("/").map((segment) => (segment.startsWith("{") ? "1" : "0")).join("");

/** The route a plain scan finds: of the contract's routes whose pattern matches, the most concrete template (first in the contract's order among equals), then its operation of that method. */
function scan(method: string, path: string) {
  const m = method === "HEAD" ? "get" : method.toLowerCase();
  const matching = operationRoutes.filter((r) => new RegExp(`^${r.path.replace(/\{[a-z_]+\}/g, "[^/]+")}$`).test(path));
  const template = matching.reduce<(typeof matching)[number] | undefined>((best, r) => (best === undefined || shape(r.path) < shape(best.path) ? r : best), undefined)?.path;
  return matching.find((r) => r.path === template && r.method === m);
}

const samplePaths = operationRoutes.flatMap((r) => {
  const filled = r.path.replace(/\{[a-z_]+\}/g, "p-1");
  return [filled, `${filled}/`, `${filled}/extra`, filled.replace(/\/[^/]+$/, ""), filled.replace("p-1", "a%2Fb"), filled.toUpperCase()];
});

describe("the route table", () => {
  it("matches every route's path with sample parameters to its own operation", () => {
    for (const r of operationRoutes) {
      expect(findRoute(r.method.toUpperCase(), r.path.replace(/\{[a-z_]+\}/g, "p-1"))?.operationId).toBe(r.operationId);
    }
  });

  it("finds what a scan of every route finds, for every method and path, those no route takes included", () => {
    let misses = 0;
    for (const path of samplePaths) {
      for (const method of METHODS) {
        const expected = scan(method, path);
        if (!expected) misses++;
        expect(findRoute(method, path)?.operationId).toBe(expected?.operationId);
      }
    }
    expect(misses).toBeGreaterThan(0);
  });

  it("a concrete path wins over a templated one, whatever the method: /spend-authorizations/simulate is Simulate's path, never an authorization's id", () => {
    const base = "/api/v1/funds/spend-authorizations";
    expect(findRoute("POST", `${base}/simulate`)?.operationId).toBe("svc.api.funds.v1.SpendService.Simulate");
    // A GET there is at Simulate's path, which takes no GET (405 Allow: POST); the templated routes still take every other id.
    expect(findRoute("GET", `${base}/simulate`)).toBeUndefined();
    expect(findRoute("GET", `${base}/Sa4kP9mW2xQ7rT5n`)?.operationId).toBe("svc.api.funds.v1.SpendService.Get");
    expect(findRoute("POST", `${base}/simulate/capture`)?.operationId).toBe("svc.api.funds.v1.SpendService.Capture");
    expect(findRoute("POST", `${base}/Sa4kP9mW2xQ7rT5n`)).toBeUndefined();
    expect(methodsAt(`${base}/simulate`)).toEqual(["POST"]);
    expect(methodsAt(`${base}/Sa4kP9mW2xQ7rT5n`)).toEqual(["GET", "HEAD"]);
  });
});
