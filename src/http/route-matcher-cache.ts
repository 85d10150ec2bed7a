// express-openapi-validator 5 compiles the path pattern of every route of the contract on every
// request it matches (lookupRoute in its openapi.metadata.js; upstream
// cdimascio/express-openapi-validator#1217 caches them, not released). The bench profiles showed it
// at about 15% of a small GET. Until the validator caches them itself, the path-to-regexp it loads
// answers the same compiled matcher for the same pattern and options: path-to-regexp is a pure
// function of them, and its RegExps carry no `g` or `y` flag, so a shared one keeps no state.
import { createRequire } from "node:module";

interface PathToRegexpModule {
  pathToRegexp: (path: unknown, options?: Record<string, unknown>) => unknown;
}

const CACHE_LIMIT = 1_000;

/** The path-to-regexp module instance that express-openapi-validator itself requires. */
export function validatorPathToRegexp(): PathToRegexpModule {
  const fromApp = createRequire(import.meta.url);
  const fromValidator = createRequire(fromApp.resolve("express-openapi-validator"));
  return fromValidator("path-to-regexp") as PathToRegexpModule;
}

const cached = new WeakSet<PathToRegexpModule["pathToRegexp"]>();

/** Makes the validator's path-to-regexp remember what it compiled. Idempotent. */
export function cacheValidatorRouteMatchers(): void {
  const module = validatorPathToRegexp();
  if (cached.has(module.pathToRegexp)) return;
  const compile = module.pathToRegexp;
  const matchers = new Map<string, unknown>();
  const memoized: PathToRegexpModule["pathToRegexp"] = (path, options) => {
    // Only plain string patterns with plain options are cached; anything else compiles as before.
    if (typeof path !== "string" || (options !== undefined && Object.values(options).some((v) => v !== null && typeof v === "object"))) {
      return compile(path, options);
    }
    const key = `${path}\u0000${JSON.stringify(options ?? {})}`;
    let matcher = matchers.get(key);
    if (matcher === undefined) {
      matcher = compile(path, options);
      if (matchers.size >= CACHE_LIMIT) matchers.delete(matchers.keys().next().value as string);
      matchers.set(key, matcher);
    }
    return matcher;
  };
  cached.add(memoized);
  module.pathToRegexp = memoized;
}
