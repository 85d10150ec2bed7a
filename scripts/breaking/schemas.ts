// Compares a schema of the released contract with the current one, in the direction data flows.
// A request schema breaks clients when it accepts less than before (a type, an enum value or a
// property no longer accepted, a constraint tightened, a property newly required); a response
// schema breaks them when it may send what they did not expect (another type, null, a value of a
// non-extensible enumeration) or no longer sends what they read (a property removed or made optional).
// Where a change sits is named from the nearest component (`SubjectAppLimit.limit`), else from the
// operation (`<operationId>:200.body.items[]`), so one change to a shared schema is one finding.
import { isNode, resolve, type Node } from "./contract.js";
import type { Findings } from "./findings.js";

export type Direction = "request" | "response";

export interface SchemaContext {
  before: Node;
  after: Node;
  findings: Findings;
  operationId: string;
}

interface Shape {
  schema: Node;
  nullable: boolean;
  /** The component the schema is (after any null wrapper), and the one the value itself is. */
  ref?: string;
  outerRef?: string;
}

/** The schema with `null` split off: `type: [T, 'null']` and `oneOf: [X, {type: 'null'}]` both read as nullable T / X. */
function shape(doc: Node, value: unknown): Shape {
  const { node, ref } = resolve(doc, value);
  const refs = ref ? { ref, outerRef: ref } : {};
  const arms = Array.isArray(node.oneOf) ? node.oneOf : Array.isArray(node.anyOf) ? node.anyOf : undefined;
  if (arms) {
    const isNull = (arm: unknown) => resolve(doc, arm).node.type === "null";
    const rest = arms.filter((arm) => !isNull(arm));
    if (rest.length < arms.length && rest.length === 1) {
      const inner = shape(doc, rest[0]);
      const innerRef = inner.ref ?? ref;
      return { schema: inner.schema, nullable: true, ...(innerRef ? { ref: innerRef } : {}), ...(ref ? { outerRef: ref } : {}) };
    }
    if (rest.length < arms.length) return { schema: { ...node, oneOf: rest, anyOf: undefined }, nullable: true, ...refs };
  }
  const types = Array.isArray(node.type) ? node.type : undefined;
  if (types?.includes("null")) {
    const others = types.filter((t) => t !== "null");
    return { schema: { ...node, type: others.length === 1 ? others[0] : others }, nullable: true, ...refs };
  }
  return { schema: node, nullable: node.type === "null", ...refs };
}

const jsonType = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v === "object" ? "object" : typeof v;

/** The declared types, else those of the enumerated values (`{enum: [...]}` without `type`), else any. */
function typeSet(s: Node): string[] | undefined {
  if (typeof s.type === "string") return [s.type];
  if (Array.isArray(s.type)) return s.type.map(String);
  const values = enumValues(s);
  return values ? [...new Set(values.map(jsonType))] : undefined;
}

/** Every type of `inner` is one of `outer` (an integer is a number). */
const typesWithin = (inner: string[], outer: string[]) => inner.every((t) => outer.includes(t) || (t === "integer" && outer.includes("number")));

const enumValues = (s: Node): unknown[] | undefined => (Array.isArray(s.enum) ? s.enum : "const" in s ? [s.const] : undefined);
const sameValue = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const missingFrom = (values: unknown[], from: unknown[]) => values.filter((v) => !from.some((w) => sameValue(v, w)));
const show = (values: unknown[]) => values.map((v) => JSON.stringify(v)).join(", ");

/** Request constraints: keyword and whether a larger value accepts less. */
const BOUNDS: ReadonlyArray<[string, "upper" | "lower"]> = [
  ["maxLength", "upper"], ["maximum", "upper"], ["exclusiveMaximum", "upper"], ["maxItems", "upper"], ["maxProperties", "upper"],
  ["minLength", "lower"], ["minimum", "lower"], ["exclusiveMinimum", "lower"], ["minItems", "lower"], ["minProperties", "lower"],
];

function armKey(doc: Node, arm: unknown, index: number): string {
  const { node, ref } = resolve(doc, arm);
  return typeof node.title === "string" ? node.title : (ref ?? `#${index}`);
}

export function compareSchemas(ctx: SchemaContext, direction: Direction, where: string, before: unknown, after: unknown, seen = new Set<string>()): void {
  const a = shape(ctx.before, before);
  const b = shape(ctx.after, after);
  const at = a.ref ?? b.ref ?? where;
  // Recursive schemas: a component is compared once per walk and direction.
  const visit = `${direction}|${at}`;
  if (seen.has(visit)) return;
  const inner = new Set(seen).add(visit);
  const report = (kind: string, place: string, message: string) => ctx.findings.add(`${direction}-${kind}`, place, message, ctx.operationId);
  const A = a.schema;
  const B = b.schema;

  // Null belongs to the value, which may be a property wrapping a component: `Widget.color`, not `Color`.
  const valueAt = a.outerRef !== undefined && a.outerRef === b.outerRef ? a.outerRef : where;
  if (direction === "request" && a.nullable && !b.nullable) report("type-changed", valueAt, `${valueAt}: null is no longer accepted`);
  if (direction === "response" && !a.nullable && b.nullable) report("nullable", valueAt, `${valueAt}: may now be null`);

  const ta = typeSet(A);
  const tb = typeSet(B);
  if (direction === "request" && tb && !(ta && typesWithin(ta, tb)))
    report("type-changed", at, `${at}: type ${ta?.join("|") ?? "any"} → ${tb.join("|")}, accepts less`);
  if (direction === "response" && ta && !(tb && typesWithin(tb, ta)))
    report("type-changed", at, `${at}: type ${ta.join("|")} → ${tb?.join("|") ?? "any"}, may send another type`);

  if (A.format !== B.format) {
    const tightened = direction === "request" ? B.format !== undefined : A.format !== undefined;
    if (tightened) report("format-changed", at, `${at}: format ${String(A.format ?? "none")} → ${String(B.format ?? "none")}`);
  }

  const ea = enumValues(A);
  const eb = enumValues(B);
  if (direction === "request" && eb) {
    const gone = ea ? missingFrom(ea, eb) : ["(any value)"];
    if (gone.length > 0) report("enum-narrowed", at, `${at}: no longer accepts ${ea ? show(gone) : "any value outside the enumeration"}`);
  }
  if (direction === "response" && ea) {
    const added = eb ? missingFrom(eb, ea) : ["(any value)"];
    if (added.length > 0 && A["x-extensible-enum"] !== true) report("enum-value-added", at, `${at}: may now send ${eb ? show(added) : "any value"} (not an extensible enumeration)`);
    const removed = eb ? missingFrom(ea, eb) : [];
    if (removed.length > 0 && A["x-extensible-enum"] !== true) report("enum-value-removed", at, `${at}: no longer sends ${show(removed)}`);
  }

  if (direction === "request") {
    for (const [keyword, bound] of BOUNDS) {
      const va = A[keyword];
      const vb = B[keyword];
      if (typeof vb !== "number") continue;
      if (typeof va !== "number" || (bound === "upper" ? vb < va : vb > va))
        report("constraint-tightened", `${at}:${keyword}`, `${at}: ${keyword} ${String(va ?? "none")} → ${vb}`);
    }
    for (const keyword of ["pattern", "multipleOf"]) {
      if (B[keyword] !== undefined && !sameValue(A[keyword], B[keyword]))
        report("constraint-tightened", `${at}:${keyword}`, `${at}: ${keyword} ${JSON.stringify(A[keyword] ?? null)} → ${JSON.stringify(B[keyword])}`);
    }
    if (B.uniqueItems === true && A.uniqueItems !== true) report("constraint-tightened", `${at}:uniqueItems`, `${at}: items must now be unique`);
    if (B.additionalProperties === false && A.additionalProperties !== false)
      report("constraint-tightened", `${at}:additionalProperties`, `${at}: no longer accepts properties it does not name`);
  }

  compareProperties(ctx, direction, at, A, B, inner, report);

  if (A.items !== undefined && B.items !== undefined) compareSchemas(ctx, direction, `${at}[]`, A.items, B.items, inner);
  if (isNode(A.additionalProperties) && isNode(B.additionalProperties))
    compareSchemas(ctx, direction, `${at}{}`, A.additionalProperties, B.additionalProperties, inner);

  const armsA = Array.isArray(A.oneOf) ? A.oneOf : undefined;
  const armsB = Array.isArray(B.oneOf) ? B.oneOf : undefined;
  if (armsA && armsB) {
    const keyed = (doc: Node, arms: unknown[]) => new Map(arms.map((arm, i) => [armKey(doc, arm, i), arm]));
    const ka = keyed(ctx.before, armsA);
    const kb = keyed(ctx.after, armsB);
    for (const [key, arm] of ka) {
      const other = kb.get(key);
      if (other !== undefined) compareSchemas(ctx, direction, `${at}|${key}`, arm, other, inner);
      else if (direction === "request") report("variant-removed", `${at}|${key}`, `${at}: the ${key} variant is no longer accepted`);
    }
    if (direction === "response")
      for (const key of kb.keys()) if (!ka.has(key)) report("variant-added", `${at}|${key}`, `${at}: may now send the ${key} variant`);
  }
}

function compareProperties(
  ctx: SchemaContext,
  direction: Direction,
  at: string,
  A: Node,
  B: Node,
  seen: Set<string>,
  report: (kind: string, place: string, message: string) => void,
): void {
  const pa = isNode(A.properties) ? A.properties : {};
  const pb = isNode(B.properties) ? B.properties : {};
  const ra = new Set(Array.isArray(A.required) ? A.required.map(String) : []);
  const rb = new Set(Array.isArray(B.required) ? B.required.map(String) : []);
  // readOnly properties are never sent in requests, writeOnly ones never in responses.
  const skip = direction === "request" ? "readOnly" : "writeOnly";
  const skipped = (doc: Node, p: unknown) => resolve(doc, p).node[skip] === true;

  for (const [name, schema] of Object.entries(pb)) {
    if (skipped(ctx.after, schema)) continue;
    const place = `${at}.${name}`;
    if (direction === "request" && rb.has(name) && !(ra.has(name) && name in pa)) report("property-required", place, `${place}: now required`);
    if (name in pa) compareSchemas(ctx, direction, place, pa[name], schema, seen);
  }
  for (const name of Object.keys(pa)) {
    if (skipped(ctx.before, pa[name])) continue;
    const place = `${at}.${name}`;
    if (direction === "response" && !(name in pb)) report("property-removed", place, `${place}: no longer sent`);
    else if (direction === "response" && ra.has(name) && !rb.has(name)) report("property-optional", place, `${place}: no longer always sent`);
    if (direction === "request" && !(name in pb) && B.additionalProperties === false) report("property-removed", place, `${place}: no longer accepted`);
  }
  // A property that only an extra `required` entry adds (no schema) is required too.
  if (direction === "request")
    for (const name of rb) if (!(name in pb) && !ra.has(name)) report("property-required", `${at}.${name}`, `${at}.${name}: now required`);
}
