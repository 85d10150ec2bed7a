// Output-only fields are ignored in requests, never refused (AIP-203): what the contract marks `readOnly`
// is dropped from a request body before the validator sees it, so an object read from an answer may be
// sent back as it is. Which members are output-only is read once per operation from its request body's
// schema, through `$ref`s, arrays and the arms of a `oneOf`/`anyOf`/`allOf` (a member must be output-only
// in every arm that has it, or in none; a schema that contains itself fails loading: the contract has
// none). docs/partners.md, "Conventions of the API".
import type { NextFunction, Request, Response } from "express";
import type { RequestShapes, SchemaNode } from "./request-shapes.js";
import { routeOf } from "./route-table.js";

/** Where a body holds output-only members: those to drop here, and the members and items to look into. */
interface Plan {
  drop: ReadonlySet<string>;
  members: ReadonlyMap<string, Plan>;
  items?: Plan;
}

const ALTERNATIVES = ["oneOf", "anyOf", "allOf"] as const;

/** `nodes` followed through `$ref`s, with the arms of their alternatives, recursively. */
function shapesOf(shapes: RequestShapes, nodes: readonly SchemaNode[]): SchemaNode[] {
  return nodes.flatMap((node) => {
    const n = shapes.deref(node);
    return [n, ...shapesOf(shapes, ALTERNATIVES.flatMap((k) => (n[k] ?? []) as SchemaNode[]))];
  });
}

/** The plan for a value that may take any of the shapes `nodes` (inside `enclosing`); undefined where it holds no output-only member. */
function planOf(shapes: RequestShapes, nodes: readonly SchemaNode[], path: string, enclosing: ReadonlySet<SchemaNode>): Plan | undefined {
  const all = shapesOf(shapes, nodes);
  if (all.some((n) => enclosing.has(n))) throw new Error(`the contract's schema of ${path} contains itself, which output-only.ts does not follow`);
  const within = new Set([...enclosing, ...all]);
  const drop = new Set<string>();
  const kept = new Set<string>();
  const memberShapes = new Map<string, SchemaNode[]>();
  for (const shape of all) {
    for (const [name, member] of Object.entries((shape.properties ?? {}) as Record<string, SchemaNode>)) {
      (member.readOnly === true || shapes.deref(member).readOnly === true ? drop : kept).add(name);
      memberShapes.set(name, [...(memberShapes.get(name) ?? []), member]);
    }
  }
  const ambiguous = [...drop].filter((name) => kept.has(name));
  if (ambiguous.length > 0) throw new Error(`the contract marks ${path}.${ambiguous[0]} read-only in one shape and not in another`);
  const members = new Map<string, Plan>();
  for (const [name, member] of memberShapes) {
    const plan = drop.has(name) ? undefined : planOf(shapes, member, `${path}.${name}`, within);
    if (plan) members.set(name, plan);
  }
  const itemShapes = all.flatMap((n) => (n.items ? [n.items as SchemaNode] : []));
  const items = itemShapes.length > 0 ? planOf(shapes, itemShapes, `${path}[]`, within) : undefined;
  if (drop.size === 0 && members.size === 0 && !items) return undefined;
  return { drop, members, ...(items ? { items } : {}) };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

function dropOutputOnly(value: unknown, plan: Plan): void {
  if (Array.isArray(value)) {
    if (plan.items) for (const item of value) dropOutputOnly(item, plan.items);
    return;
  }
  if (!isObject(value)) return;
  for (const name of plan.drop) if (Object.hasOwn(value, name)) delete value[name];
  for (const [name, member] of plan.members) if (Object.hasOwn(value, name)) dropOutputOnly(value[name], member);
}

/** Drops the output-only members of every request body, as the operation's contract marks them. Throws for a contract that is ambiguous about one. */
export function outputOnlyIgnored(shapes: RequestShapes) {
  const plans = new Map<string, Plan>();
  for (const [operationId, { body }] of shapes.operations()) {
    const plan = body && planOf(shapes, [body.schema], "body", new Set());
    if (plan) plans.set(operationId, plan);
  }
  return (req: Request, _res: Response, next: NextFunction): void => {
    const route = routeOf(req);
    const plan = route && plans.get(route.operationId);
    if (plan) dropOutputOnly(req.body, plan);
    next();
  };
}
