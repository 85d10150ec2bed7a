// What the bundled contract says each operation's request looks like, for the request checks that
// need more than the validator tells: the declared query parameters with their schemas, the
// request body's schema (with its `$ref`s followed on demand), and where in the body the contract
// takes any JSON value (free-form data, not text fields). Read once per contract file.
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { DATA, FIELDS, type TextPlace } from "../core/storable-value.js";

export type SchemaNode = Record<string, unknown>;

export interface RequestShape {
  /** Declared query parameters by name, their schemas followed. */
  query: ReadonlyMap<string, SchemaNode>;
  /** The request body's schema and media type, whether the contract requires it, and its text places, if the operation takes a body. */
  body?: { mediaType: string; schema: SchemaNode; required: boolean; text: TextPlace };
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
          ...(mediaType && media ? { body: { mediaType, schema: this.deref(media.schema as SchemaNode), required: requestBody.required === true, text: this.textPlace(media.schema as SchemaNode) } } : {}),
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

  /**
   * The text places of a body of `schema`: free-form data where the schema (in any arm of a
   * `oneOf`) is any JSON value, one with no `type` and nothing else to narrow it (a webhook
   * payload); text fields everywhere else.
   */
  private textPlace(schema: SchemaNode): TextPlace {
    const root = new PlaceNode();
    const visit = (node: SchemaNode | undefined, place: PlaceNode, depth: number): void => {
      if (depth > MAX_SCHEMA_DEPTH) return; // a recursive schema: text fields below this
      const s = this.deref(node);
      const arms = (s.oneOf ?? s.anyOf) as SchemaNode[] | undefined;
      if (arms) return arms.forEach((arm) => visit(arm, place, depth + 1));
      if (ANY_JSON_KEYWORDS.every((keyword) => s[keyword] === undefined)) {
        place.data = true;
        return;
      }
      for (const [name, member] of Object.entries((s.properties ?? {}) as Record<string, SchemaNode>)) visit(member, place.member(name), depth + 1);
      if (typeof s.additionalProperties === "object") visit(s.additionalProperties as SchemaNode, place.member(ANY), depth + 1);
      if (typeof s.items === "object") visit(s.items as SchemaNode, place.member(ANY), depth + 1);
    };
    visit(schema, root, 0);
    return root.pruned() ?? FIELDS;
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

const MAX_SCHEMA_DEPTH = 32;
/** A schema with none of these takes any JSON value. */
const ANY_JSON_KEYWORDS = ["type", "const", "enum", "properties", "items", "allOf", "not"];
/** Any member of an object or item of an array. */
const ANY = Symbol("any member or item");

/** A place of a body while its schema is read: the free-form ones, and the way to them. */
class PlaceNode {
  data = false;
  private readonly members = new Map<string | typeof ANY, PlaceNode>();

  member(key: string | typeof ANY): PlaceNode {
    let node = this.members.get(key);
    if (!node) this.members.set(key, (node = new PlaceNode()));
    return node;
  }

  /** This place as the text check walks it, or undefined when nothing below it is free-form. */
  pruned(): TextPlace | undefined {
    if (this.data) return DATA;
    const members = new Map(
      [...this.members].flatMap(([key, node]) => {
        const place = node.pruned();
        return place ? [[key, place] as const] : [];
      }),
    );
    if (members.size === 0) return undefined;
    const any = members.get(ANY) ?? FIELDS;
    return { data: false, at: (key) => members.get(key) ?? any };
  }
}
