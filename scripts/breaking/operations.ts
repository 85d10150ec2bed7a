// Compares the operations of the released contract with the current ones: an operation removed,
// renamed or moved; a request parameter or body newly required; a response status, media type or
// header removed; and, through schemas.ts, every parameter, body and response schema. The
// webhooks, whose requests the service sends, are compared by webhooks.ts.
import { isNode, operations, resolve, type Node, type Operation } from "./contract.js";
import { Findings, type BreakingChange } from "./findings.js";
import { compareSchemas, type SchemaContext } from "./schemas.js";
import { compareWebhooks } from "./webhooks.js";

const route = (op: Operation) => `${op.method.toUpperCase()} ${op.path.replace(/\{[^}]*\}/g, "{}")}`;

const content = (node: Node): Node => (isNode(node.content) ? node.content : {});

function compareParameters(ctx: SchemaContext, a: Operation, b: Operation): void {
  for (const [key, param] of b.parameters) {
    const place = `${b.id}:${key}`;
    const before = a.parameters.get(key);
    const required = param.required === true || param.in === "path";
    if (required && !(before && (before.required === true || before.in === "path")))
      ctx.findings.add("request-parameter-required", place, `${place}: a required parameter clients do not send`, b.id);
    if (before) compareSchemas(ctx, "request", place, before.schema, param.schema);
  }
}

function compareRequestBody(ctx: SchemaContext, a: Operation, b: Operation): void {
  const before = a.node.requestBody === undefined ? undefined : resolve(ctx.before, a.node.requestBody).node;
  const after = b.node.requestBody === undefined ? undefined : resolve(ctx.after, b.node.requestBody).node;
  if (!after) return;
  if (after.required === true && before?.required !== true) ctx.findings.add("request-body-required", b.id, `${b.id}: a request body is now required`, b.id);
  if (!before) return;
  const mediaAfter = content(after);
  for (const [type, media] of Object.entries(content(before))) {
    const now = mediaAfter[type];
    if (!isNode(now)) ctx.findings.add("request-media-type-removed", `${b.id}:${type}`, `${b.id}: no longer accepts ${type}`, b.id);
    else if (isNode(media)) compareSchemas(ctx, "request", `${b.id}:body`, media.schema, now.schema);
  }
}

function compareResponses(ctx: SchemaContext, a: Operation, b: Operation): void {
  const before = isNode(a.node.responses) ? a.node.responses : {};
  const after = isNode(b.node.responses) ? b.node.responses : {};
  for (const [status, value] of Object.entries(before)) {
    if (!(status in after)) {
      ctx.findings.add("response-status-removed", `${b.id}:${status}`, `${b.id}: no longer answers ${status}`, b.id);
      continue;
    }
    const ra = resolve(ctx.before, value).node;
    const rb = resolve(ctx.after, after[status]).node;
    const headersAfter = new Set(Object.keys(isNode(rb.headers) ? rb.headers : {}).map((h) => h.toLowerCase()));
    for (const header of Object.keys(isNode(ra.headers) ? ra.headers : {}))
      if (!headersAfter.has(header.toLowerCase()))
        ctx.findings.add("response-header-removed", `${b.id}:${status}:${header}`, `${b.id}: ${status} no longer carries ${header}`, b.id);
    const mediaAfter = content(rb);
    for (const [type, media] of Object.entries(content(ra))) {
      const now = mediaAfter[type];
      if (!isNode(now)) ctx.findings.add("response-media-type-removed", `${b.id}:${status}:${type}`, `${b.id}: ${status} no longer answers ${type}`, b.id);
      else if (isNode(media)) compareSchemas(ctx, "response", `${b.id}:${status}.body`, media.schema, now.schema);
    }
  }
}

/** The breaking changes from `before` (the released contract) to `after`, each with a stable id: of its operations and its webhooks. */
export function breakingChanges(before: Node, after: Node): BreakingChange[] {
  const findings = new Findings();
  const opsBefore = operations(before);
  const opsAfter = operations(after);
  const byRoute = new Map([...opsAfter.values()].map((op) => [route(op), op]));
  for (const a of opsBefore.values()) {
    const b = opsAfter.get(a.id);
    if (!b) {
      const renamed = byRoute.get(route(a));
      if (renamed) findings.add("operation-id-changed", a.id, `${route(a)}: operation id ${a.id} → ${renamed.id}`, a.id);
      else findings.add("operation-removed", a.id, `${a.id} (${a.method.toUpperCase()} ${a.path}) was removed`, a.id);
      continue;
    }
    if (route(a) !== route(b)) findings.add("operation-moved", a.id, `${a.id}: ${a.method.toUpperCase()} ${a.path} → ${b.method.toUpperCase()} ${b.path}`, a.id);
    const ctx: SchemaContext = { before, after, findings, operationId: a.id };
    compareParameters(ctx, a, b);
    compareRequestBody(ctx, a, b);
    compareResponses(ctx, a, b);
  }
  compareWebhooks(before, after, findings);
  return findings.list();
}
