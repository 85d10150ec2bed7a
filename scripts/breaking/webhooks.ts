// Compares the requests the service sends (the contract's `webhooks`), released and current. Here
// the data flows to the partner's receiver, so a receiver breaks when a request it handles is no
// longer sent, when a header it reads (the event id, the signature) is no longer sent, when the
// body is no longer sure to come or not as the media type it parses, or when the body may hold
// what it did not expect or no longer holds what it read: schemas.ts's response rules. What the
// service does with the receiver's answer is its own behaviour, described there, not compared.
import { isNode, operations, resolve, type Node, type Operation } from "./contract.js";
import type { Findings } from "./findings.js";
import { compareSchemas, type SchemaContext } from "./schemas.js";

function compareHeaders(ctx: SchemaContext, a: Operation, b: Operation): void {
  for (const [key, param] of a.parameters) {
    const place = `${b.id}:${key}`;
    const now = b.parameters.get(key);
    if (!now) {
      ctx.findings.add("webhook-header-removed", place, `${b.id}: no longer sends ${String(param.name)}`, b.id);
      continue;
    }
    if (param.required === true && now.required !== true) ctx.findings.add("webhook-header-optional", place, `${b.id}: may no longer send ${String(param.name)}`, b.id);
    compareSchemas(ctx, "response", place, param.schema, now.schema);
  }
}

function compareBody(ctx: SchemaContext, a: Operation, b: Operation): void {
  const before = a.node.requestBody === undefined ? undefined : resolve(ctx.before, a.node.requestBody).node;
  const after = b.node.requestBody === undefined ? undefined : resolve(ctx.after, b.node.requestBody).node;
  if (!before) return;
  if (before.required === true && after?.required !== true) ctx.findings.add("webhook-body-optional", b.id, `${b.id}: the body may no longer be sent`, b.id);
  const mediaAfter = isNode(after?.content) ? after.content : {};
  for (const [type, media] of Object.entries(isNode(before.content) ? before.content : {})) {
    const now = mediaAfter[type];
    if (!isNode(now)) ctx.findings.add("webhook-media-type-removed", `${b.id}:${type}`, `${b.id}: no longer sends ${type}`, b.id);
    else if (isNode(media)) compareSchemas(ctx, "response", `${b.id}:body`, media.schema, now.schema);
  }
}

/** Adds to `findings` what breaks receivers of the webhooks of `before` (the released contract) in `after`. */
export function compareWebhooks(before: Node, after: Node, findings: Findings): void {
  const sentAfter = operations(after, "webhooks");
  for (const a of operations(before, "webhooks").values()) {
    const b = sentAfter.get(a.id);
    if (!b) {
      findings.add("webhook-removed", a.id, `${a.id} (the ${a.path} webhook) is no longer sent`, a.id);
      continue;
    }
    const ctx: SchemaContext = { before, after, findings, operationId: a.id };
    compareHeaders(ctx, a, b);
    compareBody(ctx, a, b);
  }
}
