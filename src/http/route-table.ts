// Matches a request to its operation in the generated routing table, before validation, so that
// authentication (401) and roles (403) are decided before the request's shape (400).
import { operationRoutes, type OperationRoute } from "../../generated/server.js";

interface CompiledRoute {
  route: OperationRoute;
  /** Case-sensitive, and strict about a trailing slash: one path, one spelling. A group per parameter. */
  pattern: RegExp;
  parameters: string[];
}

const compile = (route: OperationRoute): CompiledRoute => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[a-z_]+\}/g, "([^/]+)")}$`),
  parameters: [...route.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!),
});

const compiled: CompiledRoute[] = operationRoutes.map(compile);
const byRoute = new Map(compiled.map((c) => [c.route, c]));
const rawRoutes = compiled.filter((c) => c.route.raw);

const methodOf = (method: string): string => (method.toLowerCase() === "head" ? "get" : method.toLowerCase());

/** A path's segments: a parameter matches no `/`, so a path matches only routes with as many. */
function segmentCount(path: string): number {
  let count = 0;
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47 /* "/" */) count++;
  return count;
}

/**
 * Orders routes of one segment count so that, at the first segment where one has a literal and the
 * other a parameter, the literal's comes first: a concrete path wins over a templated one
 * (`/spend-authorizations/simulate` over `/spend-authorizations/{authorization_id}`), as OpenAPI
 * matches them, whatever their order in the contract.
 */
function concreteFirst(a: CompiledRoute, b: CompiledRoute): number {
  const as = a.route.path.split("/");
  const bs = b.route.path.split("/");
  for (let i = 0; i < as.length; i++) {
    const aParameter = as[i]!.startsWith("{");
    if (aParameter !== bs[i]?.startsWith("{")) return aParameter ? 1 : -1;
  }
  return 0;
}

// The routes by segment count, concrete first, else in the contract's order: a request tries only those that can match.
const bySegments = new Map<number, CompiledRoute[]>();
for (const c of compiled) {
  const count = segmentCount(c.route.path);
  bySegments.set(count, [...(bySegments.get(count) ?? []), c]);
}
for (const routes of bySegments.values()) routes.sort(concreteFirst);

/**
 * The routes of the path template `path` matches. The template is chosen before the method, as
 * OpenAPI matches paths: a GET on `/spend-authorizations/simulate` is at that (POST-only) path, 405,
 * never SpendService.Get with the id "simulate".
 */
function routesAt(path: string): CompiledRoute[] {
  const routes = bySegments.get(segmentCount(path)) ?? [];
  const template = routes.find((c) => c.pattern.test(path))?.route.path;
  return template === undefined ? [] : routes.filter((c) => c.route.path === template);
}

/** The operation `method` and `path` call; HEAD calls the GET operation (RFC 9110 9.3.2: its answer without the body). */
export function findRoute(method: string, path: string): OperationRoute | undefined {
  const wanted = methodOf(method);
  return routesAt(path).find((c) => c.route.method === wanted)?.route;
}

// Several steps of a request ask for its operation; the path and method they see do not change
// (HEAD is matched as GET either way), so the answer is kept with the request.
const routes = new WeakMap<object, OperationRoute | null>();

/** findRoute for a request, matched once per request. */
export function routeOf(req: { method: string; path: string }): OperationRoute | undefined {
  let route = routes.get(req);
  if (route === undefined) {
    route = findRoute(req.method, req.path) ?? null;
    routes.set(req, route);
  }
  return route ?? undefined;
}

/** Whether `path` is that of an operation that takes its body raw (x-raw-request). */
export const isRawPath = (path: string): boolean => rawRoutes.some((c) => c.pattern.test(path));

/**
 * The path parameters of `path` for `route`, decoded, by name; undefined when the path is not the
 * route's or a parameter is not valid percent-encoding.
 */
export function pathParametersOf(route: OperationRoute, path: string): Record<string, string> | undefined {
  const c = byRoute.get(route);
  const values = c?.pattern.exec(path);
  if (!c || !values) return undefined;
  const parameters: Record<string, string> = {};
  try {
    c.parameters.forEach((name, i) => (parameters[name] = decodeURIComponent(values[i + 1]!)));
  } catch {
    return undefined;
  }
  return parameters;
}

/** `/api/v1/users/{user_id}` as Express writes it: `/api/v1/users/:user_id`. */
export const expressPath = (template: string): string => template.replace(/\{([a-z_]+)\}/g, ":$1");

/** The methods of the operations at `path`, upper-case, HEAD with GET (an `Allow` header's value); empty for no such path. */
export function methodsAt(path: string): string[] {
  const methods = routesAt(path).map((c) => c.route.method.toUpperCase());
  return (methods.includes("GET") ? [...methods, "HEAD"] : methods).sort();
}
