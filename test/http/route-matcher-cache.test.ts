// The validator's route lookup reuses compiled matchers (src/http/route-matcher-cache.ts): this
// fails if an upgrade of express-openapi-validator stops loading the path-to-regexp we cache.
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { cacheValidatorRouteMatchers, validatorPathToRegexp } from "../../src/http/route-matcher-cache.js";

describe("route matcher cache", () => {
  it("reaches the path-to-regexp that the validator's route lookup calls, and answers the same matcher for the same route", () => {
    cacheValidatorRouteMatchers();
    const requireFromApp = createRequire(import.meta.url);
    const metadata = requireFromApp.resolve("express-openapi-validator/dist/middlewares/openapi.metadata.js");
    const seenByLookup = createRequire(metadata)("path-to-regexp") as ReturnType<typeof validatorPathToRegexp>;
    expect(seenByLookup).toBe(validatorPathToRegexp());
    const options = { sensitive: false, strict: false };
    const first = seenByLookup.pathToRegexp("/api/v1/funds/subject_app_limits/:user_id/:app_id", options) as { regexp: RegExp; keys: Array<{ name: string }> };
    expect(seenByLookup.pathToRegexp("/api/v1/funds/subject_app_limits/:user_id/:app_id", { ...options })).toBe(first);
    expect(first.regexp.flags).not.toMatch(/[gy]/);
    expect(first.keys.map((k) => k.name)).toEqual(["user_id", "app_id"]);
    expect(first.regexp.exec("/api/v1/funds/subject_app_limits/u1/app-1")?.slice(1)).toEqual(["u1", "app-1"]);
    expect(seenByLookup.pathToRegexp("/api/v1/funds/subject_app_limits/:user_id/:app_id", { sensitive: true, strict: false })).not.toBe(first);
    cacheValidatorRouteMatchers();
    expect(seenByLookup.pathToRegexp("/api/v1/funds/subject_app_limits/:user_id/:app_id", options)).toBe(first);
  });
});
