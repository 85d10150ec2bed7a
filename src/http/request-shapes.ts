// What the bundled contract says each operation's request looks like, for the request checks that
// need more than the validator tells: the declared query parameters with their schemas, and the
// request body's schema (with its `$ref`s followed on demand). Read once per contract file.
import { readFileSync } from "node:fs";
import { parse } from "yaml";

export type SchemaNode = Record<string, unknown>;

export interface RequestShape {
  /** Declared query parameters by name, their schemas followed. */
  query: ReadonlyMap<string, SchemaNode>;
  /** The request body's schema and media type, and whether the contract requires it, if the operation takes a body. */
  body?: { mediaType: string; schema: SchemaNode; required: boolean };
}

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

export class RequestShapes {
  private readonly byOperation = new Map<string, RequestShape>();

  private constructor(private readonly document: SchemaNode) {
    const paths = (document.paths ?? {}) as Record<string, SchemaNode>;
    for (const item of Object.values(paths)) {
      for (const method of METHODS) {
        const op = item[method] as SchemaNode | undefined;
        if (!op) continue;
        const parameters = [...((item.parameters ?? []) as SchemaNode[]), ...((op.parameters ?? []) as SchemaNode[])].map((p) => this.deref(p));
        const query = new Map(parameters.filter((p) => p.in === "query").map((p) => [String(p.name), this.deref(p.schema as SchemaNode)]));
        const requestBody = this.deref(op.requestBody as SchemaNode | undefined);
        const content = (requestBody.content ?? {}) as Record<string, SchemaNode>;
        const [mediaType, media] = Object.entries(content)[0] ?? [];
        this.byOperation.set(String(op.operationId), {
          query,
          ...(mediaType && media ? { body: { mediaType, schema: this.deref(media.schema as SchemaNode), required: requestBody.required === true } } : {}),
        });
      }
    }
  }

  private static loaded = new Map<string, RequestShapes>();

  static of(contractPath: string): RequestShapes {
    let shapes = RequestShapes.loaded.get(contractPath);
    if (!shapes) {
      shapes = new RequestShapes(parse(readFileSync(contractPath, "utf8")) as SchemaNode);
      RequestShapes.loaded.set(contractPath, shapes);
    }
    return shapes;
  }

  operation(operationId: string): RequestShape | undefined {
    return this.byOperation.get(operationId);
  }

  /** Every operation's shape, by operation id. */
  operations(): ReadonlyMap<string, RequestShape> {
    return this.byOperation;
  }

  /** A node with its local `$ref`s followed; `{}` for none. */
  deref(node: SchemaNode | undefined): SchemaNode {
    let n: SchemaNode = node ?? {};
    while (typeof n.$ref === "string") {
      n = n.$ref
        .slice(2)
        .split("/")
        .reduce<SchemaNode>((at, part) => (at[part.replaceAll("~1", "/").replaceAll("~0", "~")] ?? {}) as SchemaNode, this.document);
    }
    return n;
  }
}
