// src/http/route-table.ts finds a request's operation among the routes of its method and segment
// count: here against a scan of every route in the contract's order, for every route's own path
// with sample parameters, and for paths no route takes.
import { describe, expect, it } from "vitest";
import { operationRoutes } from "../../../generated/server.js";
import { findRoute } from "../../../src/http/route-table.js";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** The first route of the contract whose method and pattern match, as a plain scan finds it. */
function scan(method: string, path: string) {
  const m = method === "HEAD" ? "get" : method.toLowerCase();
  return operationRoutes.find((r) => r.method === m && new RegExp(`^${r.path.replace(/\{[a-z_]+\}/g, "[^/]+")}$`).test(path));
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
});
