// Reading a bundled OpenAPI 3.1 contract for the breaking-change check: local `$ref`s resolved, and
// its operations (of paths or of webhooks) listed by operation id.
export type Node = Record<string, unknown>;

export const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

export interface Resolved {
  node: Node;
  /** The name of the last `#/components/<kind>/<name>` followed, if any. */
  ref?: string;
}

/** Follows `$ref` chains inside `doc` (bundled contracts have only local ones). */
export function resolve(doc: Node, value: unknown): Resolved {
  let node: unknown = value;
  let ref: string | undefined;
  for (let hops = 0; isNode(node) && typeof node.$ref === "string"; hops++) {
    if (hops > 50) throw new Error(`$ref cycle at ${node.$ref}`);
    const pointer: string = node.$ref;
    if (!pointer.startsWith("#/")) throw new Error(`only local $refs are supported, not ${pointer}`);
    const parts = pointer.slice(2).split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
    node = parts.reduce<unknown>((at, key) => (isNode(at) ? at[key] : undefined), doc);
    if (node === undefined) throw new Error(`unresolved $ref ${pointer}`);
    if (parts[0] === "components" && parts.length === 3) ref = parts[2];
  }
  return { node: isNode(node) ? node : {}, ...(ref === undefined ? {} : { ref }) };
}

export interface Operation {
  id: string;
  method: string;
  path: string;
  node: Node;
  /** Parameters of the path item and the operation, by `<in>.<name>` (header names lower-cased). */
  parameters: Map<string, Node>;
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

export const parameterKey = (p: Node): string =>
  `${String(p.in)}.${p.in === "header" ? String(p.name).toLowerCase() : String(p.name)}`;

/** The operations of `doc`'s paths, or of its webhooks (each `path` then the webhook's name). */
export function operations(doc: Node, section: "paths" | "webhooks" = "paths"): Map<string, Operation> {
  const found = new Map<string, Operation>();
  const items = doc[section];
  for (const [path, item] of Object.entries(isNode(items) ? items : {})) {
    const pathItem = resolve(doc, item).node;
    const shared = Array.isArray(pathItem.parameters) ? pathItem.parameters : [];
    for (const method of METHODS) {
      const node = pathItem[method];
      if (!isNode(node)) continue;
      const own = Array.isArray(node.parameters) ? node.parameters : [];
      const parameters = new Map<string, Node>();
      for (const p of [...shared, ...own]) {
        const param = resolve(doc, p).node;
        parameters.set(parameterKey(param), param);
      }
      const id = typeof node.operationId === "string" ? node.operationId : `${method.toUpperCase()} ${path}`;
      found.set(id, { id, method, path, node, parameters });
    }
  }
  return found;
}
