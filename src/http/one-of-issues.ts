// The validator reports a failed `oneOf` with the failures of every arm. Here each failed `oneOf` of the
// body is narrowed to the arm the value chose, by its type and, among object arms, by the one arm whose
// own required members it sets (`amount`, `blocked` or `unlimited` of a SpendLimit), so the answer names
// the arm and the field at fault; a value that chooses no arm, or several, gets one failure that says
// what to choose. docs/partners.md, "Conventions of the API".
import type { NextFunction, Request, Response } from "express";
import { isRecord, isSet } from "../funds/guards.js";
import type { RequestShapes, SchemaNode } from "./request-shapes.js";
import { routeOf } from "./route-table.js";

export interface ValidatorIssue {
  /** JSON pointer into the validated data, e.g. `/body/limit/amount`. */
  path?: string;
  message?: string;
  /** `<keyword>.openapi.validation`. */
  errorCode?: string;
}

type Deref = (node: SchemaNode | undefined) => SchemaNode;

const keyword = (issue: ValidatorIssue): string => (issue.errorCode ?? "").replace(/\.openapi\.validation$/, "");
const segments = (path: string | undefined): string[] => (path ?? "").split("/").filter((s) => s !== "");

function jsonTypes(value: unknown): string[] {
  if (value === null) return ["null"];
  if (Array.isArray(value)) return ["array"];
  if (typeof value === "number") return Number.isInteger(value) ? ["integer", "number"] : ["number"];
  return [typeof value];
}

const typesOf = (schema: SchemaNode): string[] | undefined =>
  schema.type === undefined ? undefined : Array.isArray(schema.type) ? (schema.type as string[]) : [String(schema.type)];

const admits = (schema: SchemaNode, value: unknown): boolean => {
  const types = typesOf(schema);
  return types === undefined || jsonTypes(value).some((t) => types.includes(t));
};

const requiredOf = (schema: SchemaNode): string[] => (schema.required ?? []) as string[];

/** The arms of a `oneOf`, an arm that is itself only a `oneOf` (a SpendLimit in `SpendLimit | null`) spread into its own. */
const armsOf = (schema: SchemaNode, deref: Deref): SchemaNode[] =>
  (schema.oneOf as SchemaNode[]).map(deref).flatMap((arm) => (Array.isArray(arm.oneOf) && arm.type === undefined && arm.properties === undefined ? armsOf(arm, deref) : [arm]));

/** The arm `value` chose, or what to tell a value that chose none or several. */
function chooseArm(arms: SchemaNode[], value: unknown): { arm: SchemaNode } | { problem: string } | undefined {
  const typed = arms.filter((a) => admits(a, value));
  if (typed.length === 0) return { problem: `must be ${[...new Set(arms.flatMap((a) => typesOf(a) ?? []))].join(" or ")}` };
  if (typed.length === 1) return { arm: typed[0]! };
  if (!isRecord(value)) return undefined;
  // An arm's own members: the required ones not every other arm requires too.
  const own = typed.map((a) => requiredOf(a).filter((k) => !typed.every((b) => requiredOf(b).includes(k))));
  const chosen = typed.filter((_, i) => own[i]!.length > 0 && own[i]!.every((k) => isSet(value[k])));
  if (chosen.length === 1) return { arm: chosen[0]! };
  return { problem: `must set exactly one of ${[...new Set(own.flat())].join(", ")}` };
}

/** The schema and the value at `path` (segments below the body), following the arms values choose. */
function at(root: SchemaNode, body: unknown, path: string[], deref: Deref): { schema: SchemaNode; value: unknown } | undefined {
  let schema = deref(root);
  let value = body;
  for (const segment of path) {
    if (Array.isArray(schema.oneOf)) {
      const choice = chooseArm(armsOf(schema, deref), value);
      if (!choice || !("arm" in choice)) return undefined;
      schema = choice.arm;
    }
    const properties = (schema.properties ?? {}) as Record<string, SchemaNode>;
    if (isRecord(value) && segment in properties) {
      schema = deref(properties[segment]);
      value = value[segment];
    } else if (Array.isArray(value) && /^\d+$/.test(segment) && schema.items) {
      schema = deref(schema.items as SchemaNode);
      value = value[Number(segment)];
    } else {
      return undefined;
    }
  }
  return { schema, value };
}

/** Whether `issue`, under the `oneOf` at `base`, is one the chosen `arm` would report. */
function fromArm(arm: SchemaNode, issue: ValidatorIssue, base: number, deref: Deref): boolean {
  const rel = segments(issue.path).slice(base);
  const kw = keyword(issue);
  // The arm admits the value's type, so a type failure at the oneOf itself is another arm's.
  if (rel.length === 0) return kw !== "type" && kw !== "oneOf";
  const [member] = rel as [string];
  const property = (arm.properties as Record<string, SchemaNode> | undefined)?.[member];
  if (rel.length === 1 && kw === "required") return requiredOf(arm).includes(member);
  if (rel.length === 1 && kw === "additionalProperties") return arm.additionalProperties === false && property === undefined;
  if (property === undefined) return false;
  // "must be null" for a member set to a value: an arm where the member belongs to another arm.
  if (rel.length === 1 && kw === "type" && issue.message === "must be null") return typesOf(deref(property))?.join() === "null";
  return true;
}

const isUnder = (issue: ValidatorIssue, base: string[]): boolean => {
  const s = segments(issue.path);
  return s.length >= base.length && base.every((b, i) => s[i] === b);
};

/**
 * The body's failures with each failed `oneOf` narrowed to the chosen arm's, innermost first.
 * `bodySchema` is the operation's request body schema; failures outside the body pass unchanged.
 */
export function narrowOneOfIssues(issues: ValidatorIssue[], body: unknown, bodySchema: SchemaNode | undefined, deref: Deref): ValidatorIssue[] {
  if (!bodySchema) return issues;
  const oneOfs = issues.filter((i) => keyword(i) === "oneOf" && segments(i.path)[0] === "body").sort((a, b) => segments(b.path).length - segments(a.path).length);
  let out = issues;
  for (const failed of oneOfs) {
    const base = segments(failed.path);
    const found = at(bodySchema, body, base.slice(1), deref);
    const choice = found && Array.isArray(found.schema.oneOf) ? chooseArm(armsOf(found.schema, deref), found.value) : undefined;
    if (!choice || !out.includes(failed)) continue;
    if ("problem" in choice) {
      out = out.filter((i) => i === failed || !isUnder(i, base)).map((i) => (i === failed ? { ...i, message: choice.problem } : i));
    } else {
      const kept = out.filter((i) => !isUnder(i, base) || fromArm(choice.arm, i, base.length, deref));
      // Should the arm's own failures not be told apart, the whole report stays.
      if (kept.some((i) => isUnder(i, base))) out = kept;
    }
  }
  const seen = new Set<string>();
  return out.filter((i) => {
    const key = `${i.path}\u0000${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const isValidatorFailure = (e: unknown): e is { status: number; errors: ValidatorIssue[] } =>
  typeof e === "object" && e !== null && (e as { status?: unknown }).status === 400 && Array.isArray((e as { errors?: unknown }).errors);

/** Error middleware right after the validator: narrows its failures before they are rendered. */
export function narrowOneOfFailures(shapes: RequestShapes) {
  return (err: unknown, req: Request, _res: Response, next: NextFunction): void => {
    if (isValidatorFailure(err)) {
      const route = routeOf(req);
      const schema = route && shapes.operation(route.operationId)?.body?.schema;
      err.errors = narrowOneOfIssues(err.errors, req.body, schema, (node) => shapes.deref(node));
    }
    next(err);
  };
}
