// Every error the token endpoint documents, provoked as a client would and compared whole with its
// example in the contract (status, body, `error`), the request id aside: code written against the
// documented answers works against the server.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contract } from "../../support/contract.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";

let ts: TestServer;
beforeAll(async () => (ts = await startTestServer()));
afterAll(async () => ts?.stop());

type Example = { value: { details: { requestId?: string }[] } };
const responses = contract.paths["/auth/v1/token"].post.responses as Record<string, { content: { "application/json": { examples?: Record<string, Example>; example?: Example["value"] } } }>;
const documented = (status: number, name: string): unknown => {
  const media = responses[String(status)]!.content["application/json"];
  return name === "example" ? media.example : media.examples?.[name]?.value;
};

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const good = { grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret };

/** Each documented example and a request that must be answered with it. */
const CASES: { status: number; example: string; send: () => { headers?: Record<string, string>; body: string } }[] = [
  { status: 400, example: "credentialsInHeader", send: () => ({ headers: { Authorization: `Basic ${Buffer.from("a:b").toString("base64")}` }, body: form(good) }) },
  { status: 400, example: "missingParameter", send: () => ({ body: form({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId }) }) },
  { status: 400, example: "unsupportedGrantType", send: () => ({ body: form({ ...good, grant_type: "password" }) }) },
  { status: 400, example: "invalidScope", send: () => ({ body: form({ ...good, scope: "admin" }) }) },
  // RFC 6749 3.1: parameters must not be included more than once; which client_id was meant is not guessed.
  { status: 400, example: "repeatedParameter", send: () => ({ body: `${form(good)}&client_id=${encodeURIComponent(BOOTSTRAP.clientId)}` }) },
  // express.urlencoded stops at 20 parameters: refused as the client's fault, never a 500.
  { status: 400, example: "tooManyParameters", send: () => ({ body: form(Object.fromEntries([...Object.entries(good), ...Array.from({ length: 30 }, (_, i) => [`p${i}`, "x"])])) }) },
  { status: 401, example: "example", send: () => ({ body: form({ ...good, client_secret: "wrong" }) }) },
];

const withoutRequestId = (body: unknown) => {
  const copy = structuredClone(body) as Example["value"];
  for (const d of copy.details) if (d.requestId) d.requestId = "-";
  return copy;
};

describe("the token endpoint's documented errors", () => {
  it("has a case for every documented 400 and 401 example", () => {
    const named = ["400", "401"].flatMap((s) => {
      const media = responses[s]!.content["application/json"];
      return [...Object.keys(media.examples ?? {}), ...(media.example ? ["example"] : [])].map((n) => `${s} ${n}`);
    });
    expect(named.sort()).toEqual(CASES.map((c) => `${c.status} ${c.example}`).sort());
  });

  for (const c of CASES) {
    it(`${c.status} ${c.example}: answered exactly as documented`, async () => {
      const { headers, body } = c.send();
      const answer = await fetch(`${ts.url}/auth/v1/token`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers }, body });
      expect(answer.status).toBe(c.status);
      expect(answer.headers.get("cache-control")).toBe("no-store");
      expect(withoutRequestId(await answer.json())).toEqual(withoutRequestId(documented(c.status, c.example)));
    });
  }
});
