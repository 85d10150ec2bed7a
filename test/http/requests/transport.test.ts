// The transport rules, through real HTTP (raw sockets where the bytes matter), on the API and the
// webhook intake alike: a body whose framing breaks is 400 MALFORMED_HTTP_REQUEST and its operation
// never runs; a Content-Length over the limit is 413 before the body is read; HEAD is the GET
// operation without the body; and one rule for JSON bodies: no Content-Encoding, UTF-8 (charset and
// byte order mark), numbers within the range of a double.
import { gzipSync } from "node:zlib";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { operations, schemaErrors } from "../../support/contract.js";
import { parseAnswers, rawExchange, rawRequest, type ParsedAnswer } from "../../support/raw-http.js";
import { bootstrapToken, logCapture, startTestServer, type TestServer } from "../../support/server.js";
import { amount, funds, newAppId } from "../limits/helpers.js";
import { isSandboxOnly } from "../../../src/http/sandbox-routes.js";
import { createHooked, eventsOf, hmacHeaders, newEventId, sendHmac, unixTime, type Hooked } from "../webhooks/helpers.js";

let ts: TestServer;
const logs = logCapture();
let bearer = "";
let hook: Hooked;

beforeAll(async () => {
  ts = await startTestServer({}, logs.stream);
  bearer = await bootstrapToken(ts.url);
  hook = await createHooked(ts);
});
afterAll(async () => ts?.stop());

const MALFORMED_MESSAGE = "the request is not well-formed HTTP/1.1";

function expectStatusBody(r: ParsedAnswer, status: number, reason: string, message?: string): void {
  expect(r.status, r.text).toBe(status);
  expect(schemaErrors("Status", r.body)).toEqual([]);
  const info = r.body?.details.find((d: any) => d["@type"].endsWith("ErrorInfo"));
  const request = r.body?.details.find((d: any) => d["@type"].endsWith("RequestInfo"));
  expect(info.reason).toBe(reason);
  if (message !== undefined) expect(r.body?.message).toBe(message);
  expect(request.requestId).toBe(r.headers.get("x-request-id"));
}

/** The head of a request on the API (creating a user) and on the intake, without the framing headers. */
const heads = () => ({
  api: `POST /api/v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bearer}\r\nContent-Type: application/json\r\n`,
  intake: `POST ${new URL(hook.url).pathname} HTTP/1.1\r\nHost: x\r\n${Object.entries(hmacHeaders(hook.secret, "{}", unixTime(ts), newEventId())).map(([k, v]) => `${k}: ${v}\r\n`).join("")}`,
});

const userBody = (email: string) => JSON.stringify({ displayName: "Framing", email, roles: ["ROLE_USER"] });
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

async function userExists(email: string): Promise<boolean> {
  const list = unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100 } } }));
  return list.list.some((u) => u.user.email === email);
}

describe("a body whose framing is broken is 400 MALFORMED_HTTP_REQUEST with the Status body, and nothing runs", () => {
  const logStart = () => logs.text().length;
  const linesSince = (at: number) => logs.text().slice(at).split("\n").filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string; requestId?: string });

  for (const target of ["api", "intake"] as const) {
    it(`${target}: a bad chunk size, at once or after the request was handed over, is answered, logged as a warning, and the connection closed`, async () => {
      const at = logStart();
      const email = `chunk-${target}-${Date.now()}@example.com`;
      const body = target === "api" ? userBody(email) : '{"n":1}';
      const head = `${heads()[target]}Transfer-Encoding: chunked\r\n\r\n`;
      const before = target === "intake" ? (await eventsOf(ts.admin, hook.id)).length : 0;
      // At once; after the request was handed over; and a chunk cut short by the end of the sender's side.
      for (const [parts, halfClose] of [[[`${head}zz\r\n${body}\r\n0\r\n\r\n`], false], [[head + chunk(body), "zz\r\n"], false], [[head, "ff\r\n{}"], true]] as const) {
        const answers = parseAnswers(await rawExchange(ts.url, parts, { gapMs: 150, halfClose }));
        expect(answers).toHaveLength(1);
        expectStatusBody(answers[0]!, 400, "MALFORMED_HTTP_REQUEST", MALFORMED_MESSAGE);
        expect(answers[0]!.headers.get("connection")).toBe("close");
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      const lines = linesSince(at);
      expect(lines.filter((l) => l.level >= 50), "error-level log lines").toEqual([]);
      expect(lines.filter((l) => l.msg === "refused by the HTTP parser" && l.level === 40).length).toBeGreaterThanOrEqual(2);
      if (target === "api") expect(await userExists(email)).toBe(false);
      else expect((await eventsOf(ts.admin, hook.id)).length).toBe(before);
    });

    it(`${target}: a Transfer-Encoding other than chunked alone (xchunked, gzip before or after chunked) is 400`, async () => {
      for (const coding of ["xchunked", "chunked, gzip", "identity", "gzip, chunked", "identity, chunked"]) {
        const answers = parseAnswers(await rawExchange(ts.url, [`${heads()[target]}Transfer-Encoding: ${coding}\r\n\r\n2\r\n{}\r\n0\r\n\r\n`]));
        expect(answers, coding).toHaveLength(1);
        expectStatusBody(answers[0]!, 400, "MALFORMED_HTTP_REQUEST", MALFORMED_MESSAGE);
      }
    });

    it(`${target}: bytes past a Content-Length that begin no request are 400, after the answer to the request before them`, async () => {
      const answers = parseAnswers(await rawExchange(ts.url, [`${heads()[target]}Content-Length: 2\r\n\r\n{}{"displayName":"x"}`]));
      expect(answers.map((a) => a.status)).toEqual([target === "api" ? 400 : 200, 400]);
      // The request was the two bytes `{}`: for the API a body without the required fields, for the intake a signed `{}`.
      if (target === "api") expectStatusBody(answers[0]!, 400, "INVALID_ARGUMENT");
      expectStatusBody(answers[1]!, 400, "MALFORMED_HTTP_REQUEST", MALFORMED_MESSAGE);
      expect(answers[1]!.headers.get("connection")).toBe("close");
    });
  }

  it("an operation that takes no body runs only once the body it was sent arrived whole: a DELETE whose body breaks deletes nothing", async () => {
    const app = newAppId("framing");
    unwrap(await funds(ts.admin).capSet(app, { controls: { limit: amount("5") } }));
    const head = `DELETE /api/v1/funds/app-caps/${app} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bearer}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const answers = parseAnswers(await rawExchange(ts.url, [head + chunk("ab"), "zz\r\n"], { gapMs: 300 }));
    expect(answers).toHaveLength(1);
    expectStatusBody(answers[0]!, 400, "MALFORMED_HTTP_REQUEST");
    expect((await funds(ts.admin).capGet(app)).response.status).toBe(200);
  });

  it("an operation that takes no body does not parse one it is sent: it is read and dropped, within the limit", async () => {
    // The rule is by method: no GET or DELETE operation of the contract takes a body, every other one does.
    for (const o of operations) expect(Boolean(o.op.requestBody), o.operationId).toBe(!["get", "delete"].includes(o.method));
    const auth = { Authorization: `Bearer ${bearer}`, "Content-Type": "application/json" };
    for (const [headers, body] of [[{}, "{"], [{ "Content-Encoding": "gzip" }, "{}"], [{ "Content-Type": "application/json; charset=utf-16" }, "[]"]] as const) {
      const answer = await rawRequest(ts.url, "GET", "/api/v1/users", { ...auth, ...headers }, Buffer.from(body));
      expect(answer.status, answer.text).toBe(200);
    }
    const big = await rawRequest(ts.url, "GET", "/api/v1/users", auth, Buffer.alloc(256 * 1024 + 1, 0x20));
    expect([big.status, JSON.parse(big.text).message]).toEqual([413, "the request body exceeds the limit"]);
  });

  it("the server keeps answering", async () => {
    expect((await fetch(`${ts.url}/healthz`)).status).toBe(200);
  });
});

/** Sends only the head of a request declaring `length` bytes, and answers the status and headers it gets before any body. */
function declaredOnly(method: string, path: string, length: number, headers: Record<string, string>): Promise<http.IncomingMessage> {
  const url = new URL(ts.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, agent: false, headers: { ...headers, "Content-Length": String(length) } }, (res) => {
      res.resume();
      resolve(res);
      req.destroy();
    });
    req.on("error", reject);
    req.flushHeaders(); // the headers only; the body never comes
  });
}

describe("a Content-Length over the limit is 413 before the body is read, on every operation", () => {
  // The intake operations (raw requests) look their listener up first: an unknown one is 404 before its size.
  for (const { operationId, method, path, op } of operations.filter((o) => o.op["x-raw-request"] !== true)) {
    it(`${operationId.replace(/^svc\.api\./, "")}: 10 MB declared is 413 at once, and the connection is closed`, async () => {
      // The token endpoint takes no Authorization header.
      const form = Boolean(op.requestBody?.content?.["application/x-www-form-urlencoded"]);
      const headers: Record<string, string> = form ? { "Content-Type": "application/x-www-form-urlencoded" } : { Authorization: `Bearer ${bearer}`, "Content-Type": "application/json" };
      const res = await declaredOnly(method.toUpperCase(), path.replace(/\{[a-z_]+\}/g, "transport-1"), 10 * 1024 * 1024, headers);
      // Not the sandbox: its own operations are not bound here, and say so before anything else.
      expect(res.statusCode).toBe(isSandboxOnly(operationId) ? 404 : 413);
      if (!isSandboxOnly(operationId)) expect(res.headers.connection).toBe("close");
    });
  }

  it("the limit is 256 KB: one byte more is 413 at once", async () => {
    expect((await declaredOnly("POST", "/api/v1/users", 256 * 1024 + 1, { Authorization: `Bearer ${bearer}`, "Content-Type": "application/json" })).statusCode).toBe(413);
  });
});

describe("HEAD is the GET operation without the body", () => {
  const getOperations = operations.filter((o) => o.method === "get");
  const same = (a: Awaited<ReturnType<typeof rawRequest>>, b: Awaited<ReturnType<typeof rawRequest>>) => {
    expect(a.status).toBe(b.status);
    expect(a.headers["content-type"]).toBe(b.headers["content-type"]);
    expect(a.headers["content-length"]).toBe(b.headers["content-length"]);
    expect(a.headers["www-authenticate"]).toBe(b.headers["www-authenticate"]);
  };

  it("on every GET operation: the same status and headers, Content-Length included, and no body", async () => {
    expect(getOperations.length).toBeGreaterThan(10);
    const user = await ts.userClient(["ROLE_USER"]);
    const userToken = ((await (await fetch(`${ts.url}/auth/v1/token`, { method: "POST", body: new URLSearchParams({ grant_type: "client_credentials", client_id: user.clientId, client_secret: user.clientSecret }) })).json()) as { access_token: string }).access_token;
    for (const { path } of getOperations) {
      const target = path.replace(/\{[a-z_]+\}/g, "transport-1");
      // The admin, a user (403 on admin operations), no token (401), and a query the contract refuses (400).
      for (const [headers, query] of [[{ Authorization: `Bearer ${bearer}` }, ""], [{ Authorization: `Bearer ${userToken}` }, ""], [{}, ""], [{ Authorization: `Bearer ${bearer}` }, "?colour=blue"]] as const) {
        const h = { ...headers, "X-Request-Id": "head-vs-get" };
        const get = await rawRequest(ts.url, "GET", target + query, h);
        const head = await rawRequest(ts.url, "HEAD", target + query, h);
        same(head, get);
        expect(head.text).toBe("");
        expect(Number(get.headers["content-length"])).toBe(Buffer.byteLength(get.text));
      }
    }
    const list = await rawRequest(ts.url, "HEAD", "/api/v1/users", { Authorization: `Bearer ${bearer}` });
    expect(list.status).toBe(200);
    expect(Number(list.headers["content-length"])).toBeGreaterThan(0);
    // Eight requests for each GET operation, one after the other: a loaded run takes over 30 s.
  }, 120_000);

  it("Allow names HEAD where GET is taken; HEAD where it is not is 405", async () => {
    const onList = await rawRequest(ts.url, "PUT", "/api/v1/users", { Authorization: `Bearer ${bearer}` });
    expect(onList.headers.allow).toBe("GET, HEAD, POST");
    const onCheck = await rawRequest(ts.url, "HEAD", "/api/v1/automation-steps/check", { Authorization: `Bearer ${bearer}` });
    expect(onCheck.status).toBe(405);
    expect(onCheck.headers.allow).toBe("POST");
    expect((await rawRequest(ts.url, "HEAD", new URL(hook.url).pathname, {})).headers.allow).toBe("POST");
  });
});

describe("one rule for JSON bodies on the API and the intake", () => {
  const apiCreate = (body: Buffer | string, headers: Record<string, string> = {}) =>
    rawRequest(ts.url, "POST", "/api/v1/users", { Authorization: `Bearer ${bearer}`, "Content-Type": "application/json", ...headers }, Buffer.from(body));
  const intake = (body: Buffer | string, headers: Record<string, string> = {}) => sendHmac(ts, hook.url, hook.secret, Buffer.from(body), { headers });
  const parsed = (a: { text: string }) => JSON.parse(a.text) as Record<string, any>;
  const reasonOf = (body: Record<string, any>) => body.details?.find((d: any) => d.reason)?.reason as string | undefined;

  it("a charset other than utf-8 is 415 on both; utf-8 in any case, quoted or not, is taken", async () => {
    for (const charset of ["utf-16", "UTF-16LE", "latin1", "iso-8859-1", "utf8", "us-ascii"]) {
      const encoded = (text: string) => (charset.toLowerCase().startsWith("utf-16") ? Buffer.from(text, "utf16le") : Buffer.from(text, "latin1"));
      const api = await apiCreate(encoded(userBody(`cs-${charset}-${Date.now()}@example.com`)), { "Content-Type": `application/json; charset=${charset}` });
      expect([api.status, reasonOf(parsed(api)), parsed(api).message], charset).toEqual([415, "UNSUPPORTED_MEDIA_TYPE", "unsupported request body encoding"]);
      const hooked = await intake(encoded('{"n":1}'), { "Content-Type": `application/json; charset=${charset}` });
      expect([hooked.status, reasonOf(hooked.body), hooked.body.message], charset).toEqual([415, "UNSUPPORTED_MEDIA_TYPE", "unsupported request body encoding"]);
    }
    for (const charset of ["utf-8", "UTF-8", '"utf-8"']) {
      const api = await apiCreate(userBody(`ok-${Date.now()}-${Math.random()}@example.com`), { "Content-Type": `application/json; charset=${charset}` });
      expect(api.status, `${charset}: ${api.text}`).toBe(200);
      expect((await intake('{"n":1}', { "Content-Type": `application/json;charset=${charset}` })).status, charset).toBe(200);
    }
  });

  it("a body that begins with a byte order mark is 400 MALFORMED_BODY on both, and nothing is stored", async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const email = `bom-${Date.now()}@example.com`;
    const api = await apiCreate(Buffer.concat([bom, Buffer.from(userBody(email))]));
    expect([api.status, reasonOf(parsed(api)), parsed(api).message]).toEqual([400, "MALFORMED_BODY", "the request body begins with a byte order mark"]);
    expect(await userExists(email)).toBe(false);
    const before = (await eventsOf(ts.admin, hook.id)).length;
    const hooked = await intake(Buffer.concat([bom, Buffer.from('{"n":1}')]));
    expect([hooked.status, reasonOf(hooked.body), hooked.body.message]).toEqual([400, "MALFORMED_BODY", "the request body begins with a byte order mark"]);
    expect((await eventsOf(ts.admin, hook.id)).length).toBe(before);
  });

  it("the intake refuses a Content-Encoding other than identity with 415, signed over the bytes sent or not, and consumes no event id", async () => {
    const before = (await eventsOf(ts.admin, hook.id)).length;
    const eventId = newEventId();
    for (const [coding, body] of [["gzip", gzipSync('{"n":1}')], ["gzip", Buffer.from('{"n":1}')], ["br", Buffer.from('{"n":1}')], ["deflate, identity", Buffer.from("{}")], ["x-unknown", Buffer.from("{}")]] as const) {
      const hooked = await sendHmac(ts, hook.url, hook.secret, body, { eventId, headers: { "Content-Encoding": coding } });
      expect([hooked.status, reasonOf(hooked.body), hooked.body.message], coding).toEqual([415, "UNSUPPORTED_MEDIA_TYPE", "unsupported request body encoding"]);
    }
    expect((await eventsOf(ts.admin, hook.id)).length).toBe(before);
    expect((await sendHmac(ts, hook.url, hook.secret, '{"n":1}', { eventId, headers: { "Content-Encoding": "identity" } })).status).toBe(200);
  });

  it("a number beyond the range of a double is 400 naming it on the intake, as on the API, and nothing is recorded", async () => {
    const before = (await eventsOf(ts.admin, hook.id)).length;
    for (const [body, field] of [['{"amount":1e309}', "body.amount"], ['{"a":[1,-1e400]}', "body.a[1]"], ["1e309", "body"]] as const) {
      const hooked = await intake(body);
      expect([hooked.status, reasonOf(hooked.body), hooked.body.message], body).toEqual([400, "INVALID_ARGUMENT", `${field}: must not contain numbers beyond the range of a double (about 1.8e308)`]);
    }
    expect((await eventsOf(ts.admin, hook.id)).length).toBe(before);
    // Up to the largest double, the payload is taken.
    expect((await intake('{"amount":1.7976931348623157e308}')).status).toBe(200);
  });
});
