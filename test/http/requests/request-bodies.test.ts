// Bodies no operation can take are refused with the contract's error body before they are parsed,
// never a 500: a compressed body (any Content-Encoding; the API does not decompress) is 415, JSON
// nested deeper than 128 levels is 400 (what runs next would recurse past the stack), and an empty
// body is 400 MALFORMED_BODY where the contract requires one (every operation that takes a body).
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALLOWED_ROLES } from "../../../src/identity/roles.js";
import { operations } from "../../support/contract.js";
import { bootstrapToken, startTestServer, type TestServer } from "../../support/server.js";

let ts: TestServer;
let auth: Record<string, string>;

beforeAll(async () => {
  // The sandbox, so that its own operations (bound there only) are sent these bodies too.
  ts = await startTestServer({}, undefined, { sandbox: true });
  auth = { Authorization: `Bearer ${await bootstrapToken(ts.url)}` };
});
afterAll(async () => ts?.stop());

async function send(method: string, path: string, headers: Record<string, string>, body: Buffer | string) {
  const answer = await fetch(ts.url + path.replace(/\{[a-z_]+\}/g, "bodies-1"), { method: method.toUpperCase(), headers, body });
  const json = (await answer.json()) as { message: string; details: { reason?: string }[] };
  return { status: answer.status, reason: json.details.find((d) => d.reason)?.reason, message: json.message };
}

const bodied = operations.filter((o) => o.op.requestBody && o.op["x-raw-request"] !== true);

describe("request bodies the API refuses before parsing them", () => {
  it("covers every operation that takes a body, the token endpoint's form included", () => {
    expect(bodied.map((o) => o.operationId)).toContain("svc.api.iam.v1.TokenService.CreateToken");
    expect(bodied.length).toBeGreaterThan(10);
  });

  for (const { operationId, method, path, op } of bodied) {
    const form = Boolean(op.requestBody.content?.["application/x-www-form-urlencoded"]);
    const type = form ? "application/x-www-form-urlencoded" : "application/json";
    const headersOf = () => ({ ...(operationId in ALLOWED_ROLES ? auth : {}), "Content-Type": type });
    const plain = form ? "grant_type=client_credentials&client_id=a&client_secret=b" : "{}";
    const name = operationId.replace(/^svc\.api\./, "");

    it(`${name}: a compressed body is 415, whether it decompresses or not`, async () => {
      const headers = headersOf();
      for (const [encoding, body] of [["gzip", gzipSync(plain)], ["gzip", plain], ["gzip", Buffer.alloc(0)], ["deflate", "garbage"], ["br", "garbage"], ["x-unknown", plain]] as const) {
        expect(await send(method, path, { ...headers, "Content-Encoding": encoding }, body)).toEqual({
          status: 415,
          reason: "UNSUPPORTED_MEDIA_TYPE",
          message: "unsupported request body encoding",
        });
      }
    });

    it(`${name}: an empty body is 400 MALFORMED_BODY (the token endpoint's invalid_request), a Content-Type's parameters or not`, async () => {
      expect(op.requestBody.required).toBe(true);
      const reason = form ? "INVALID_REQUEST" : "MALFORMED_BODY";
      for (const contentType of [type, `${type}; charset=utf-8`]) {
        expect(await send(method, path, { ...headersOf(), "Content-Type": contentType }, "")).toEqual({ status: 400, reason, message: "the request body is empty" });
      }
    });

    if (!form) {
      it(`${name}: JSON nested deeper than 128 levels is 400 MALFORMED_BODY; 128 levels reach the schema`, async () => {
        const headers = headersOf();
        for (const depth of [129, 5_000, 60_000]) {
          expect(await send(method, path, headers, "[".repeat(depth) + "]".repeat(depth))).toEqual({
            status: 400,
            reason: "MALFORMED_BODY",
            message: "the request body nests arrays and objects deeper than 128 levels",
          });
        }
        expect((await send(method, path, headers, "[".repeat(128) + "]".repeat(128))).reason).toBe("INVALID_ARGUMENT");
      });
    }
  }

  it("CheckAutomationSteps: a samplePayload 5,000 levels deep is 400, not a stack overflow", async () => {
    const samplePayload = "[".repeat(5_000) + "]".repeat(5_000);
    const body = `{"automationSteps":[],"samplePayload":${samplePayload}}`;
    expect((await send("post", "/api/v1/automation-steps/check", { ...auth, "Content-Type": "application/json" }, body)).status).toBe(400);
  });
});
