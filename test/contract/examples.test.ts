// Every operation shows a partner what to send and what comes back: a request example where it
// takes a body and a 200 example, both valid against their schemas (the mock serves them).
import { describe, expect, it } from "vitest";
import { deref, operations, responseErrors } from "../support/contract.js";

type Node = Record<string, any>;
const exampleOf = (media: Node | undefined): unknown => media?.example ?? Object.values((media?.examples ?? {}) as Node)[0]?.value ?? deref(media?.schema).example;

describe("examples", () => {
  for (const o of operations) {
    it(`${o.operationId} has valid request and response examples`, () => {
      const body = o.op.requestBody ? deref(o.op.requestBody) : undefined;
      if (body) expect(exampleOf(Object.values(body.content as Node)[0] as Node), "request example").toBeDefined();
      const ok = deref(o.op.responses["200"]).content["application/json"] as Node;
      const example = exampleOf(ok);
      expect(example, "200 example").toBeDefined();
      expect(responseErrors(o.operationId, 200, example)).toEqual([]);
    });
  }
});
