// Every operation shows a partner what to send and what comes back: a request example where it
// takes a body and a 200 example, both valid against their schemas (the mock serves them). A list's
// example shows there is a next page, with a token as the server spells one (src/core/pagination.ts).
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

  /** The sort key a token of src/core/pagination.ts resumes after, if `token` is spelled as it spells one: base64url(JSON array) "." base64url(HMAC-SHA256). */
  const sortKeyOf = (token: string): unknown[] | undefined => {
    const [payload = "", mac = "", ...rest] = token.split(".");
    const canonical = (text: string) => /^[A-Za-z0-9_-]+$/.test(text) && Buffer.from(text, "base64url").toString("base64url") === text;
    if (rest.length > 0 || !canonical(payload) || !canonical(mac) || Buffer.from(mac, "base64url").length !== 32) return undefined;
    const key: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    return Array.isArray(key) ? key : undefined;
  };
  const lists = operations.filter((o) => deref(deref(o.op.responses["200"]).content["application/json"].schema).properties?.nextPageToken);

  it.each(lists.map((o) => [o.operationId, o] as const))("%s: its 200 example shows a next page, whose token resumes after the last item shown", (_, o) => {
    const example = exampleOf(deref(o.op.responses["200"]).content["application/json"] as Node) as { list: Node[]; nextPageToken: string };
    const key = sortKeyOf(example.nextPageToken);
    expect(key, example.nextPageToken).toBeDefined();
    // Each item is one view under one key ({ user: {…} }); the sort key is made of that view's fields.
    const last = Object.values(example.list.at(-1)!)[0] as Node;
    expect(key!.filter((k) => !Object.values(last).includes(k))).toEqual([]);
  });

  it("finds the lists (by their nextPageToken)", () => expect(lists.length).toBeGreaterThan(0));
});
