// Matches a request to its operation in the generated routing table, before validation, so that
// authentication (401) and roles (403) are decided before the request's shape (400).
import { operationRoutes, type OperationRoute } from "../../generated/server.js";

interface CompiledRoute {
  route: OperationRoute;
  pattern: RegExp;
}

const compiled: CompiledRoute[] = operationRoutes.map((route) => ({
  route,
  // Case-sensitive, and strict about a trailing slash: one path, one spelling.
  pattern: new RegExp(`^${route.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{[a-z_]+\\?\}/g, "[^/]+").replace(/\{[a-z_]+\}/g, "[^/]+")}$`),
}));

/** The operation `method` and `path` call; HEAD calls the GET operation (RFC 9110 9.3.2: its answer without the body). */
export function findRoute(method: string, path: string): OperationRoute | undefined {
  const m = method.toLowerCase() === "head" ? "get" : method.toLowerCase();
  return compiled.find((c) => c.route.method === m && c.pattern.test(path))?.route;
}

/** `/api/v1/users/{user_id}` as Express writes it: `/api/v1/users/:user_id`. */
export const expressPath = (template: string): string => template.replace(/\{([a-z_]+)\}/g, ":$1");

/** The methods of the operations at `path`, upper-case, HEAD with GET (an `Allow` header's value); empty for no such path. */
export function methodsAt(path: string): string[] {
  const methods = compiled.filter((c) => c.pattern.test(path)).map((c) => c.route.method.toUpperCase());
  return (methods.includes("GET") ? [...methods, "HEAD"] : methods).sort();
}
