// src/http/output-only.ts reads which members of a request body are output-only from the contract:
// through `$ref`s (a `readOnly` beside one included), array items and the arms of a `oneOf`, at any
// depth; everything else is left as sent. A contract that marks a member read-only in one arm and not
// in another, or whose request schema contains itself, is refused when the server starts.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Request, Response } from "express";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { outputOnlyIgnored } from "../../../src/http/output-only.js";
import { RequestShapes } from "../../../src/http/request-shapes.js";

const dir = mkdtempSync(join(tmpdir(), "output-only-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let written = 0;
/** A contract whose FundPolicyService.Update (a route the server knows) takes a body of `schema`, with `schemas` beside it. */
function contractWith(schema: object, schemas: Record<string, object> = {}): RequestShapes {
  const path = join(dir, `contract-${++written}.yaml`);
  const operation = { operationId: "svc.api.funds.v1.FundPolicyService.Update", requestBody: { required: true, content: { "application/json": { schema } } } };
  writeFileSync(path, stringify({ openapi: "3.1.0", paths: { "/api/v1/funds/policy": { post: operation } }, components: { schemas } }));
  return RequestShapes.of(path);
}

/** `body` as the step leaves it for the operation. */
function sentThrough(shapes: RequestShapes, body: unknown): unknown {
  const req = { method: "POST", path: "/api/v1/funds/policy", body } as unknown as Request;
  let passed = false;
  outputOnlyIgnored(shapes)(req, {} as Response, (err?: unknown) => {
    expect(err).toBeUndefined();
    passed = true;
  });
  expect(passed).toBe(true);
  return req.body;
}

const readOnly = { type: "string", readOnly: true };

describe("output-only members are dropped from request bodies, as the contract marks them", () => {
  it("at any depth: in members, array items, oneOf arms, and beside a $ref; nothing else", () => {
    const shapes = contractWith(
      {
        type: "object",
        properties: {
          id: readOnly,
          stamp: { $ref: "#/components/schemas/Stamp", readOnly: true },
          name: { type: "string" },
          items: { type: "array", items: { $ref: "#/components/schemas/Item" } },
          choice: {
            oneOf: [
              { type: "object", properties: { a: { type: "object" }, url: readOnly } },
              { type: "object", properties: { b: { type: "object" }, url: readOnly } },
            ],
          },
        },
      },
      { Stamp: { type: "string" }, Item: { type: "object", properties: { name: { type: "string" }, createdAt: readOnly } } },
    );
    const body = {
      id: "x",
      stamp: "s",
      name: "kept",
      extra: { id: "kept: not a member of the schema" },
      items: [{ name: "one", createdAt: "t" }, { createdAt: null }, "not an object"],
      choice: { b: { url: "kept: inside b, not a choice member" }, url: "dropped" },
    };
    expect(sentThrough(shapes, body)).toEqual({
      name: "kept",
      extra: { id: "kept: not a member of the schema" },
      items: [{ name: "one" }, {}, "not an object"],
      choice: { b: { url: "kept: inside b, not a choice member" } },
    });
    // Bodies of other shapes pass as they are.
    for (const other of [null, "text", 5, [{ id: "x" }], undefined]) expect(sentThrough(shapes, other)).toEqual(other);
  });

  it("a member read-only in one arm and not in another makes the contract refused at start", () => {
    const shapes = contractWith({ oneOf: [{ type: "object", properties: { url: readOnly } }, { type: "object", properties: { url: { type: "string" } } }] });
    expect(() => outputOnlyIgnored(shapes)).toThrow("the contract marks body.url read-only in one shape and not in another");
  });

  it("a request schema that contains itself makes the contract refused at start", () => {
    const shapes = contractWith({ $ref: "#/components/schemas/Node" }, { Node: { type: "object", properties: { id: readOnly, child: { $ref: "#/components/schemas/Node" } } } });
    expect(() => outputOnlyIgnored(shapes)).toThrow("the contract's schema of body.child contains itself");
  });
});
