// A partner exercises every documented error of every operation on the mock: a well-formed request
// with `Prefer: code=<status>, example=<name>` is answered with exactly that example (the request id
// aside), with the `Retry-After` the response declares; `Prefer: code=<status>` alone, with the
// operation's first example of that status. The examples are the server's own answers
// (npm test holds each against the answers its servers gave), so what the mock teaches is what the
// server says.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contract, deref, operations } from "../support/contract.js";
import { declaredErrors, type DeclaredError } from "../support/declared-errors.js";
import { startMock } from "../support/mock.js";
import { senderHeaders, senderKindOf, UNKNOWN_SECRET } from "../support/sender-deliveries.js";
import type { Served } from "../support/process.js";

type Node = Record<string, any>;
let mock: Served;
beforeAll(async () => (mock = await startMock()));
afterAll(async () => mock?.stop());

/** Every path parameter's documented example, by name. */
const paramExamples = new Map<string, string>(
  Object.values((contract.components?.parameters ?? {}) as Node).filter((p: Node) => p.in === "path").map((p: Node) => [p.name as string, String(p.example)]),
);

/** A request the mock accepts for the operation: its path, a JWT-shaped token, its example body. */
async function wellFormed(operationId: string): Promise<{ url: string; init: RequestInit }> {
  const { path, method, op } = operations.find((o) => o.operationId === operationId)!;
  const url = mock.url + path.replace(/\{([a-z_]+)\}/g, (_, name: string) => paramExamples.get(name) ?? "x");
  const headers: Record<string, string> = {};
  if ((op.security ?? contract.security).some((s: Node) => "bearerAuth" in s || "oauth2" in s)) {
    headers.Authorization = "Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";
  }
  let body: string | undefined;
  const content = deref(op.requestBody).content as Node | undefined;
  if (content?.["application/json"]) {
    const media = content["application/json"] as Node;
    body = JSON.stringify(media.example ?? deref(Object.values((media.examples ?? {}) as Node)[0]).value ?? deref(media.schema).example ?? {});
    headers["Content-Type"] = "application/json";
  } else if (content?.["application/x-www-form-urlencoded"]) {
    body = new URLSearchParams(content["application/x-www-form-urlencoded"].example as Record<string, string>).toString();
    headers["Content-Type"] = "application/x-www-form-urlencoded";
  }
  // An Idempotency-Key where the operation requires one (its documented example).
  for (const p of [...((contract.paths[path].parameters ?? []) as Node[]), ...((op.parameters ?? []) as Node[])].map((p) => deref(p))) {
    if (p.in === "header" && p.required === true) headers[p.name as string] = String(p.example);
  }
  if (op["x-raw-request"] === true) Object.assign(headers, await intakeHeaders(operationId, body ?? ""));
  return { url, init: { method: method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) } };
}

/** The headers of a delivery of the operation's sender, timestamped now and signed with any secret (the mock verifies none). */
async function intakeHeaders(operationId: string, body: string): Promise<Record<string, string>> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const kind = senderKindOf(operationId);
  if (!kind) return { "Webhook-Timestamp": timestamp, "Webhook-Event-Id": randomUUID(), "Webhook-Signature": "c2lnbmF0dXJl" };
  // A Stripe event's id is its body's; the example body has one.
  const id = kind === "stripe" ? (JSON.parse(body) as { id: string }).id : randomUUID();
  return senderHeaders(kind, UNKNOWN_SECRET, body, { id, timestamp });
}

const withoutRequestId = (body: Node): Node => ({
  ...body,
  details: (body.details as Node[]).map((d) => (d.requestId === undefined ? d : { ...d, requestId: "-" })),
});

/** Asks the mock for `d` with `prefer`, and expects exactly its documented example, with the `Retry-After` its response declares. */
async function expectForced(d: DeclaredError, prefer: string): Promise<void> {
  const { url, init } = await wellFormed(d.operationId);
  const answer = await fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), Prefer: prefer } });
  const op = operations.find((o) => o.operationId === d.operationId)!;
  const media = deref(op.op.responses[String(d.status)]).content["application/json"] as Node;
  const documented = d.name === "example" ? (media.example as Node) : (deref(media.examples[d.name]).value as Node);
  expect(answer.status).toBe(d.status);
  expect(withoutRequestId((await answer.json()) as Node)).toEqual(withoutRequestId(documented));
  // A header the server sends with the error (Retry-After of a 429, a 409 IDEMPOTENCY_KEY_IN_USE, a 503) comes with it.
  if (deref(op.op.responses[String(d.status)]).headers?.["Retry-After"]) expect(answer.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
}

describe("every documented error example, forced on the mock with Prefer", () => {
  for (const d of declaredErrors) {
    it(`${d.operationId.replace(/^svc\.api\./, "")} ${d.status} ${d.name}`, () => expectForced(d, d.name === "example" ? `code=${d.status}` : `code=${d.status}, example=${d.name}`));
  }
});

describe("Prefer: code=N alone answers the operation's first documented example of N", () => {
  // The first example of each operation's each error status, in the contract's order.
  const firsts = declaredErrors.filter((d, i) => declaredErrors.findIndex((e) => e.operationId === d.operationId && e.status === d.status) === i);
  it("finds them: named examples, where Prism alone answers the Status schema's own example", () => {
    expect(firsts.filter((d) => d.name !== "example").length).toBeGreaterThan(100);
  });
  for (const d of firsts) {
    it(`${d.operationId.replace(/^svc\.api\./, "")} ${d.status}: ${d.name}`, () => expectForced(d, `code=${d.status}`));
  }
  it("as docs/partners.md shows it: the app cap of an app without one is 404 APP_CAP_NOT_FOUND", async () => {
    const answer = await fetch(`${mock.url}/api/v1/funds/app-caps/app-github`, { headers: { Authorization: "Bearer a.b.c", Prefer: "code=404" } });
    expect(answer.status).toBe(404);
    const body = (await answer.json()) as Node;
    expect(body.details.find((d: Node) => d.reason !== undefined)?.reason).toBe("APP_CAP_NOT_FOUND");
  });
});
