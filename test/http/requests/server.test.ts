// The HTTP layer itself: request ids, the one error body for every failure (unknown routes, wrong
// methods, malformed JSON, oversized bodies), the served contract and docs, health, and logs.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contractPath, operations, schemaErrors } from "../../support/contract.js";
import { parseAnswers, rawExchange, rawRequest } from "../../support/raw-http.js";
import { BOOTSTRAP, bootstrapToken, logCapture, startTestServer, type TestServer } from "../../support/server.js";

let ts: TestServer;
const logs = logCapture();
let accessToken = "";
beforeAll(async () => {
  ts = await startTestServer({}, logs.stream);
  accessToken = await bootstrapToken(ts.url);
});
afterAll(async () => ts?.stop());

/** Each path of the contract with its parameters filled, and its template. */
const operationPaths = [...new Set(operations.map((o) => o.path))].map((template) => [template.replace(/\{[a-z_]+\}/g, "route-1"), template] as const);

async function call(method: string, path: string, init: { body?: string | Buffer; headers?: Record<string, string> } = {}) {
  const r = await fetch(ts.url + path, {
    method,
    headers: { Authorization: `Bearer ${accessToken}`, ...init.headers },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, body: text.startsWith("{") ? (JSON.parse(text) as Record<string, any>) : undefined };
}

function expectStatusBody(r: { status: number; headers: Headers; body?: Record<string, any> }, status: number, reason: string) {
  expect(r.status).toBe(status);
  expect(schemaErrors("Status", r.body)).toEqual([]);
  const info = r.body?.details.find((d: any) => d["@type"].endsWith("ErrorInfo"));
  const request = r.body?.details.find((d: any) => d["@type"].endsWith("RequestInfo"));
  expect(info.reason).toBe(reason);
  expect(request.requestId).toBe(r.headers.get("x-request-id"));
}

describe("the one error body", () => {
  it("unknown routes are 404", async () => expectStatusBody(await call("GET", "/api/v1/nothing-here"), 404, "ROUTE_NOT_FOUND"));

  it("a wrong method is 405", async () => expectStatusBody(await call("PUT", "/api/v1/users"), 405, "METHOD_NOT_ALLOWED"));

  it("every method a path does not take is 405 with the Status body and Allow naming the ones it does (HEAD with GET), the webhook intake's included", async () => {
    for (const [path, template] of operationPaths) {
      const methods = operations.filter((o) => o.path === template).map((o) => o.method.toUpperCase());
      const allowed = [...methods, ...(methods.includes("GET") ? ["HEAD"] : [])].sort();
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"].filter((m) => !allowed.includes(m))) {
        const r = await call(method, path, method === "GET" || method === "DELETE" ? {} : { body: "{}", headers: { "Content-Type": "application/json" } });
        expectStatusBody(r, 405, "METHOD_NOT_ALLOWED");
        expect(r.headers.get("allow"), `${method} ${path}`).toBe(allowed.join(", "));
      }
    }
  });

  it("routing is case-sensitive and strict about trailing slashes: another spelling is 404 with the Status body", async () => {
    for (const [method, path] of [["GET", "/API/v1/users"], ["GET", "/api/v1/Users"], ["GET", "/api/v1/users/"], ["POST", "/api/v1/webhooks/incoming/wh_1/"], ["GET", "/auth/v1/token/"]] as const) {
      expectStatusBody(await call(method, path), 404, "ROUTE_NOT_FOUND");
    }
  });

  it("no header field is dropped unseen: past 200 fields a request is 431, an Authorization after 1,999 others included", async () => {
    const many = await rawRequest(ts.url, "GET", "/api/v1/funds/policy", { a: Array(1_999).fill("b"), Authorization: `Bearer ${accessToken}` });
    expect(many.status).toBe(431);
    expect(JSON.parse(many.text)).toMatchObject({ message: "the request has more than 200 header fields", details: [{ reason: "HEADERS_TOO_LARGE" }, { requestId: many.headers["x-request-id"] }] });
    const enough = await rawRequest(ts.url, "GET", "/api/v1/funds/policy", { a: Array(150).fill("b"), Authorization: `Bearer ${accessToken}` });
    expect(enough.status).toBe(200);
  });

  it("OPTIONS * is 404 with the Status body", async () => {
    const r = await rawRequest(ts.url, "OPTIONS", "*", {});
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text).details[0].reason).toBe("ROUTE_NOT_FOUND");
  });

  it("malformed JSON is 400, never a stack trace", async () => {
    const r = await call("POST", "/api/v1/users", { body: '{"displayName": ', headers: { "Content-Type": "application/json" } });
    expectStatusBody(r, 400, "MALFORMED_BODY");
    expect(r.text).not.toMatch(/at .*\.(js|ts):\d+/);
  });

  it("a body that is not UTF-8 is 400 and stores nothing (no U+FFFD in its place)", async () => {
    const email = `utf8-${Date.now()}@example.com`;
    const bytes = Buffer.concat([Buffer.from('{"displayName":"caf'), Buffer.from([0xe9]), Buffer.from(`","email":"${email}","roles":["ROLE_USER"]}`)]);
    expectStatusBody(await call("POST", "/api/v1/users", { body: bytes, headers: { "Content-Type": "application/json" } }), 400, "MALFORMED_BODY");
    const users = await call("GET", "/api/v1/users?page_size=100");
    expect(users.text).not.toContain(email);
    const form = Buffer.concat([Buffer.from("grant_type=client_credentials&client_id=x&client_secret=caf"), Buffer.from([0xe9])]);
    const token = await call("POST", "/auth/v1/token", { body: form, headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: "" } });
    expect(token.status).toBe(400);
  });

  it("text no database stores as sent (a NUL, an unpaired surrogate) is 400 naming the field, in the body or the query", async () => {
    for (const displayName of ["nul\u0000here", "half \ud800 a pair", "\udc00"]) {
      const body = JSON.stringify({ displayName, email: `t-${Date.now()}@example.com`, roles: ["ROLE_USER"] });
      const r = await call("POST", "/api/v1/users", { body, headers: { "Content-Type": "application/json" } });
      expectStatusBody(r, 400, "INVALID_ARGUMENT");
      expect(r.body?.message).toMatch(/^body\.displayName: /);
    }
    const token = await call("POST", "/auth/v1/token", { body: "grant_type=client_credentials&client_id=a%00b&client_secret=x", headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: "" } });
    expect(token.status).toBe(400);
    expectStatusBody(await call("GET", "/api/v1/users?page_token=a%00b"), 400, "INVALID_ARGUMENT");
  });

  it("a number past the range of a double is 400 naming the field, even in a free-form value", async () => {
    const body = '{"automationSteps":[],"samplePayload":{"amount":-1e400}}';
    const r = await call("POST", "/api/v1/automation-steps/check", { body, headers: { "Content-Type": "application/json" } });
    expectStatusBody(r, 400, "INVALID_ARGUMENT");
    expect(r.body?.message).toMatch(/^body\.samplePayload\.amount: .*range of a double/);
  });

  it("a path parameter that is not percent-encoded UTF-8 is 400, on the validated routes and the raw intake alike", async () => {
    for (const path of ["/api/v1/webhooks/incoming/%ff", "/api/v1/webhooks/incoming/a%c0%af", "/api/v1/users/%ff", "/api/v1/funds/my/app-limits/%e2%82"]) {
      const r = await call(path.includes("webhooks") ? "POST" : "GET", path, { body: path.includes("webhooks") ? "{}" : undefined, headers: { "Content-Type": "application/json" } });
      expect(r.status, `${path}: ${r.text}`).toBe(400);
      expect(schemaErrors("Status", r.body)).toEqual([]);
    }
  });

  it("a JSON body in a charset other than UTF-8 is 415", async () => {
    const r = await call("POST", "/api/v1/users", { body: "{}", headers: { "Content-Type": "application/json; charset=latin1" } });
    expectStatusBody(r, 415, "UNSUPPORTED_MEDIA_TYPE");
  });

  it("a body over the limit is 413", async () => {
    const big = JSON.stringify({ displayName: "x".repeat(300 * 1024), email: "a@example.com", roles: ["ROLE_USER"] });
    expectStatusBody(await call("POST", "/api/v1/users", { body: big, headers: { "Content-Type": "application/json" } }), 413, "PAYLOAD_TOO_LARGE");
  });

  it("a body that breaks the contract is 400 naming the field", async () => {
    const r = await call("POST", "/api/v1/users", { body: JSON.stringify({ displayName: "x", email: "not-an-email", roles: ["ROLE_USER"] }), headers: { "Content-Type": "application/json" } });
    expectStatusBody(r, 400, "INVALID_ARGUMENT");
    const violations = r.body?.details.find((d: any) => d["@type"].endsWith("BadRequest")).fieldViolations;
    expect(violations.map((v: any) => v.field)).toContain("body.email");
  });

  it("an unknown query parameter is 400", async () => expectStatusBody(await call("GET", "/api/v1/users?colour=blue"), 400, "INVALID_ARGUMENT"));
});

/** The one answer to `bytes`, sent on a fresh connection the server then closes. */
async function exchangeOne(bytes: string) {
  const answers = parseAnswers(await rawExchange(ts.url, [bytes]));
  expect(answers).toHaveLength(1);
  return answers[0]!;
}

describe("requests Node's HTTP parser refuses still get the error body", () => {
  it("a header section over 16 KB is 431, and the header's value is not logged", async () => {
    const secret = `Bearer ${"s".repeat(20_000)}`;
    const r = await exchangeOne(`GET /api/v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: ${secret}\r\n\r\n`);
    expectStatusBody(r, 431, "HEADERS_TOO_LARGE");
    expect(r.headers.get("connection")).toBe("close");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(logs.text()).toContain(r.headers.get("x-request-id")!);
    expect(logs.text()).not.toContain("s".repeat(100));
  });

  it("malformed HTTP is 400", async () => {
    for (const request of ["GET /api/v1/users HTTP/1.1\r\nHost: x\r\nNot A Header\r\n\r\n", "NOT-HTTP\r\n\r\n", "POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"]) {
      expectStatusBody(await exchangeOne(request), 400, "MALFORMED_HTTP_REQUEST");
    }
  });
});

describe("request ids", () => {
  it("every response carries one; a well-formed caller id is reused, a hostile one replaced", async () => {
    const fresh = await call("GET", "/healthz");
    expect(fresh.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect((await call("GET", "/healthz", { headers: { "X-Request-Id": "trace-123" } })).headers.get("x-request-id")).toBe("trace-123");
    expect((await call("GET", "/healthz", { headers: { "X-Request-Id": "<script>alert(1)</script> and more" } })).headers.get("x-request-id")).not.toContain("script");
  });
});

describe("served artifacts and health", () => {
  it("/openapi.yaml is the bundled contract and /docs the Redoc page", async () => {
    const spec = await call("GET", "/openapi.yaml");
    expect(spec.status).toBe(200);
    expect(spec.text).toBe(readFileSync(contractPath, "utf8"));
    const docs = await call("GET", "/docs");
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-type")).toContain("text/html");
    expect(docs.text).toContain("svc.api.funds.v1.SubjectAppLimitService.Suspend");
  });

  it("/healthz and /readyz answer without credentials", async () => {
    expect((await fetch(`${ts.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${ts.url}/readyz`)).json()).toEqual({ status: "ready" });
  });
});

describe("logs", () => {
  it("one structured JSON line per request, with no secrets or tokens", async () => {
    await call("GET", "/api/v1/users?page_size=10");
    await fetch(`${ts.url}/auth/v1/token?client_secret=${BOOTSTRAP.clientSecret}`, { method: "POST", body: "x" });
    await new Promise((r) => setTimeout(r, 50));
    const lines = logs.text().trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = lines.filter((l) => l.msg === "request");
    expect(requests.length).toBeGreaterThan(5);
    expect(requests.every((l) => typeof l.requestId === "string" && typeof l.status === "number")).toBe(true);
    expect(logs.text()).not.toContain(BOOTSTRAP.clientSecret);
    expect(logs.text()).not.toContain(accessToken);
    expect(logs.text()).not.toContain(accessToken.split(".")[2]!);
  });
});
