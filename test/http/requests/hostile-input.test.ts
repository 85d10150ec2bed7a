// Contract-driven hostile input. For every operation of the contract (read from
// generated/openapi.yaml, so a new operation is covered without a change here), fast-check
// generates requests from the operation's own schemas: valid ones (never answered 5xx) and broken
// ones: a body with a member of the wrong type, huge, deeply nested, past int64 or unknown, bytes
// that are not UTF-8, bad path and query parameters, bad headers. Every broken request is answered
// 4xx with the contract's error body, and the server keeps answering. Seeded: FC_SEED replays a
// run, FC_RUNS sets the number of requests per operation and kind.
import { createHmac } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { parseJsonBody } from "../../../src/webhooks/body.js";
import { contract, operations, requestBodyErrors, responseErrors, type Operation } from "../../support/contract.js";
import { testDialect } from "../../support/database.js";
import { rawRequest, type RawAnswer } from "../../support/raw-http.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { badUtf8, broken, deref, toJsonText, validValue, withBytes, type Schema } from "../../support/schema-arbitraries.js";
import { SENDER_HEADERS, SENDER_KINDS, SENDER_OPERATIONS, senderHeaders, senderKindOf, senderListeners, type SenderKind, type SenderListener } from "../../support/sender-deliveries.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";
import { amount, funds, newAppId } from "../limits/helpers.js";
import { createHooked, newEventId, sendHmac, unixTime, type Hooked } from "../webhooks/helpers.js";

const SEED = Number(process.env.FC_SEED ?? 20_261_120);
const RUNS = Number(process.env.FC_RUNS ?? 25);
const RECEIVE = "svc.api.webhooks.v1.IncomingWebhookService.Receive";
const TOKEN = "svc.api.iam.v1.TokenService.CreateToken";
/** The intake's operations, the headers their senders set (`send` signs each request) and values that break any of them. */
const INTAKE_HEADERS: Record<string, { names: readonly string[]; bad: readonly string[] }> = {
  [RECEIVE]: { names: ["Webhook-Timestamp", "Webhook-Event-Id", "Webhook-Signature"], bad: ["", "abc", "1e400", "9223372036854775808", "-1", "00000000-0000-0000-0000-000000000000", "x".repeat(5000)] },
  // An event name takes "abc" and "-1": these break ids, timestamps, names and signatures alike.
  ...Object.fromEntries(SENDER_KINDS.map((kind) => [SENDER_OPERATIONS[kind], { names: SENDER_HEADERS[kind], bad: ["", "Not an id!", "x".repeat(5000)] }])),
};

const counts = reliabilitySuite("hostile-input", testDialect());
let ts: TestServer;
let bearer: string;
let hook: Hooked;
let senders: Record<SenderKind, SenderListener>;
/** Ids of things that exist, mixed into generated path parameters so requests reach past the 404s. */
const known: Record<string, string[]> = {};

beforeAll(async () => {
  ts = await startTestServer();
  const r = await fetch(`${ts.url}/auth/v1/token`, { method: "POST", body: new URLSearchParams({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret }) });
  bearer = ((await r.json()) as { access_token: string }).access_token;
  const user = await ts.userClient(["ROLE_USER"]);
  const app = newAppId("hostile");
  unwrap(await funds(ts.admin).setLimit(user.userId, app, { limit: amount("10") }));
  unwrap(await funds(ts.admin).capSet(app, { controls: { limit: amount("10") } }));
  unwrap(await funds(user.client).mySetLimit(app, { limit: amount("10") }));
  hook = await createHooked(ts);
  const event = await sendHmac(ts, hook.url, hook.secret);
  senders = await senderListeners(ts);
  const credentials = unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.userId } } }));
  const spend = unwrap(
    await ts.admin.POST("/api/v1/funds/spend-authorizations", {
      params: { header: { "Idempotency-Key": "hostile-input-setup" } },
      body: { userId: user.userId, appId: app, amount: amount("1").amount.money },
    }),
  );
  Object.assign(known, {
    user_id: [user.userId],
    app_id: [app],
    credential_id: [credentials.list[0]!.credential.id!],
    // A listener answers only at its kind's operation.
    [RECEIVE]: [hook.listenerId],
    ...Object.fromEntries(SENDER_KINDS.map((kind) => [SENDER_OPERATIONS[kind], [senders[kind].listenerId]])),
    "automations/{id}": [hook.id],
    "automation_executions/{id}": [event.body.webhookEvent.automationExecutionId as string],
    authorization_id: [spend.authorization.id],
  });
});
afterAll(async () => ts?.stop());

interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema: Schema;
}

function parametersOf(op: Operation): Parameter[] {
  const all = [...((contract.paths[op.path].parameters ?? []) as Schema[]), ...((op.op.parameters ?? []) as Schema[])];
  return all.map((p) => deref(p) as Parameter);
}

const bodyMediaType = (op: Operation): string | undefined => Object.keys((op.op.requestBody?.content ?? {}) as object)[0];
const bodySchema = (op: Operation): Schema | undefined => {
  const mediaType = bodyMediaType(op);
  return mediaType ? (op.op.requestBody.content[mediaType].schema as Schema) : undefined;
};

/** A request as generated, before it is put on the wire. */
interface Request {
  path: Record<string, string>;
  query: [string, string][];
  headers: Record<string, string>;
  /** Sent as is when a Buffer; else serialized for the operation's media type. */
  body?: unknown;
}

function pathParam(op: Operation, p: Parameter): fc.Arbitrary<string> {
  const key = p.name === "id" ? op.path.match(/([a-z_]+)\/\{id\}/)?.[0] ?? "id" : p.name === "listener_id" ? op.operationId : p.name;
  const ids = known[key] ?? [];
  const generated = validValue(p.schema) as fc.Arbitrary<string>;
  return ids.length > 0 ? fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...ids) }, { weight: 1, arbitrary: generated }) : generated;
}

/** Valid requests of `op`: every parameter and the body from their schemas. */
function validRequest(op: Operation): fc.Arbitrary<Request> {
  const params = parametersOf(op);
  const path = fc.record(Object.fromEntries(params.filter((p) => p.in === "path").map((p) => [p.name, pathParam(op, p)])));
  const query = fc.tuple(
    ...params
      .filter((p) => p.in === "query")
      .map((p) => fc.option(validValue(p.schema).map((v) => [p.name, String(v)] as [string, string]), { nil: undefined })),
  );
  // The intake's headers are made by `send`; other operations' required headers (Authorize's Idempotency-Key) from their schemas.
  const required = op.operationId in INTAKE_HEADERS ? [] : params.filter((p) => p.in === "header" && p.required);
  const headers = fc.record(Object.fromEntries(required.map((p) => [p.name, validValue(p.schema)])));
  const schema = bodySchema(op);
  const body = schema ? validValue(schema) : fc.constant(undefined);
  return fc.record({ path, query, headers, body }).map(({ path, query, headers, body }) => ({
    path: path as Record<string, string>,
    query: query.filter((q): q is [string, string] => q !== undefined),
    headers: headers as Record<string, string>,
    body,
  }));
}

const BAD_SEGMENTS = ["%ff", "%00", "%2e%2e", "..", "a%2Fb", "%c0%af", ".hidden", "-dash", "a".repeat(129), "a".repeat(4000), "%F0%9F%92%A9", "%20", "a%0d%0aX-Injected:%201"];
const BAD_QUERY_VALUES = ["abc", "1e400", "-1", "9223372036854775808", "1.5", "", "%ff", "0x10", "x".repeat(2000), "[]", "null"];
const BAD_CONTENT_TYPES = ["text/plain", "application/xml", "application/json; charset=utf-16", "application/json; charset=latin1", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", "*/*", "garbage"];
const BAD_AUTHORIZATIONS = ["Bearer", "Bearer ", "Basic YWRtaW46YWRtaW4=", "Bearer a.b.c", "Bearer " + "A".repeat(6000), "Bearer \u00ff\u00fe", "bearer  x.y.z"];

/** Broken requests of `op`: one thing wrong, from the body, a parameter or a header. */
function brokenRequest(op: Operation): fc.Arbitrary<Request> {
  const params = parametersOf(op);
  const mediaType = bodyMediaType(op);
  const ways: fc.Arbitrary<Request>[] = [];
  const valid = validRequest(op);
  if (mediaType) {
    // The intake takes any JSON within its limits: a raw value it takes (`-0`, nesting 64 deep) breaks nothing there.
    const breaks = op.operationId in INTAKE_HEADERS ? (r: Request) => !intakeTakes(serialize(op, r.body)) : (r: Request) => requestBodyErrors(op.operationId, r.body).length > 0 || hasRaw(r.body);
    ways.push(valid.chain((r) => broken(r.body).map((body) => ({ ...r, body }))).filter(breaks));
    ways.push(fc.tuple(valid, badUtf8).map(([r, bytes]) => ({ ...r, body: withBytes(serialize(op, r.body), bytes) })));
    ways.push(fc.tuple(valid, fc.constantFrom("{", '{"a":', "[1,]", "{'a':1}", "NaN", "x", "x".repeat(300_000))).map(([r, text]) => ({ ...r, body: Buffer.from(text) })));
    if (!(op.operationId in INTAKE_HEADERS)) ways.push(fc.tuple(valid, fc.constantFrom(...BAD_CONTENT_TYPES)).map(([r, type]) => ({ ...r, headers: { "Content-Type": type } })));
  }
  const pathParams = params.filter((p) => p.in === "path");
  if (pathParams.length > 0) {
    ways.push(fc.tuple(valid, fc.constantFrom(...pathParams.map((p) => p.name)), fc.constantFrom(...BAD_SEGMENTS)).map(([r, name, bad]) => ({ ...r, path: { ...r.path, [name]: `\u0000${bad}` } })));
  }
  const queryNames = params.filter((p) => p.in === "query").map((p) => p.name);
  // A page_size of any decimal integer is valid (clamped to 10..100): "-1" and 2^63 are bad for every other parameter only.
  // A free-text parameter (UserService.List's `query`) takes "abc" or "null" once: given once, such a value breaks nothing.
  const badFor = ([, name, bad, twice]: [unknown, string, string, boolean]) => !(name === "page_size" && /^-?[1-9][0-9]*$/.test(bad)) && (twice || !freeTextTakes(params.find((p) => p.in === "query" && p.name === name), bad));
  ways.push(fc.tuple(valid, fc.constantFrom(...queryNames, "zz_unknown", "page_size"), fc.constantFrom(...BAD_QUERY_VALUES), fc.boolean()).filter(badFor).map(([r, name, bad, twice]) => ({
    ...r,
    query: [...r.query, [name, `\u0000${bad}`] as [string, string], ...(twice ? [[name, `\u0000${bad}`] as [string, string]] : [])],
  })).filter((r) => queryNames.length === 0 || r.query.length > 0));
  const intake = INTAKE_HEADERS[op.operationId];
  if (intake) {
    ways.push(fc.tuple(valid, fc.constantFrom(...intake.names), fc.constantFrom(...intake.bad)).map(([r, name, bad]) => ({ ...r, headers: { [name]: bad } })));
  } else if (op.operationId !== TOKEN) {
    ways.push(fc.tuple(valid, fc.constantFrom(...BAD_AUTHORIZATIONS)).map(([r, authorization]) => ({ ...r, headers: { ...r.headers, Authorization: authorization } })));
    if (parametersOf(op).some((p) => p.name === "Idempotency-Key")) {
      ways.push(fc.tuple(valid, fc.constantFrom("", "x".repeat(256))).map(([r, bad]) => ({ ...r, headers: { ...r.headers, "Idempotency-Key": bad } })));
    }
  }
  return fc.oneof(...ways);
}

/** Whether the webhook intake takes `text` as a body: JSON by its one rule (src/webhooks/body.ts), at most 64 KB. */
function intakeTakes(text: string): boolean {
  const bytes = Buffer.from(text, "utf8");
  try {
    parseJsonBody(bytes);
    return bytes.length <= 65_536;
  } catch {
    return false;
  }
}

const hasRaw = (value: unknown): boolean => JSON.stringify(value)?.includes("\\u0000raw:") ?? false;

function serialize(op: Operation, body: unknown): string {
  if (bodyMediaType(op) === "application/x-www-form-urlencoded") {
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries((body ?? {}) as Record<string, unknown>)) form.append(k, typeof v === "string" ? v : JSON.stringify(v));
    return form.toString();
  }
  return toJsonText(body);
}

/** Percent-encodes the UTF-8 bytes of `text` (a lone surrogate becomes U+FFFD, as any client sends it). */
const percentEncoded = (text: string) => [...Buffer.from(text, "utf8")].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, "0").toUpperCase()}`)).join("");

/** Whether `value`, sent as written, is valid for a plain string parameter (no enum, no format) as its schema's lengths and pattern say. */
function freeTextTakes(parameter: Parameter | undefined, value: string): boolean {
  const s = parameter && deref(parameter.schema);
  if (!s || s.type !== "string" || s.enum || s.format || value.includes("%")) return false;
  return value.length >= (s.minLength ?? 0) && value.length <= (s.maxLength ?? Infinity) && (!s.pattern || new RegExp(s.pattern).test(value));
}

/** A broken parameter value is marked by a leading NUL: it goes on the wire as written (`%ff` stays `%ff`). */
const raw = (value: string): string | undefined => (value.startsWith("\u0000") ? value.slice(1) : undefined);

/** Puts `request` on the wire, parameters percent-encoded unless marked raw. */
async function send(op: Operation, request: Request): Promise<RawAnswer> {
  const segment = (value: string) => raw(value) ?? percentEncoded(value);
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => segment(request.path[name] ?? ""));
  const query = request.query.map(([k, v]) => `${percentEncoded(k)}=${raw(v) ?? percentEncoded(v)}`).join("&");
  const mediaType = bodyMediaType(op);
  const body = request.body instanceof Buffer ? request.body : mediaType ? Buffer.from(serialize(op, request.body), "utf8") : undefined;
  const headers: Record<string, string> = {};
  if (mediaType) headers["Content-Type"] = mediaType;
  if (op.operationId === RECEIVE) {
    const eventId = newEventId();
    const timestamp = unixTime(ts);
    Object.assign(headers, {
      "Webhook-Timestamp": timestamp,
      "Webhook-Event-Id": eventId,
      "Webhook-Signature": createHmac("sha256", hook.secret).update(`${timestamp}.${eventId}.`).update(body ?? Buffer.alloc(0)).digest("base64url"),
    });
  } else if (senderKindOf(op.operationId)) {
    const kind = senderKindOf(op.operationId)!;
    Object.assign(headers, await senderHeaders(kind, senders[kind].secret, (body ?? Buffer.alloc(0)).toString("utf8"), { id: newEventId(), timestamp: unixTime(ts) }));
  } else if (op.operationId !== TOKEN) {
    headers.Authorization = `Bearer ${bearer}`;
  }
  for (const [name, value] of Object.entries(request.headers)) headers[name] = value;
  return rawRequest(ts.url, op.method.toUpperCase(), `${path}${query ? `?${query}` : ""}`, headers, body);
}

const parsed = (answer: RawAnswer): unknown => {
  try {
    return answer.text ? JSON.parse(answer.text) : undefined;
  } catch {
    return answer.text;
  }
};

const describeAnswer = (answer: RawAnswer) => `${answer.status} ${answer.text.slice(0, 300)}`;

async function expectStillUp(): Promise<void> {
  expect((await fetch(`${ts.url}/healthz`)).status).toBe(200);
}

const options = (runs: number): fc.Parameters<[Request]> => ({ seed: SEED, numRuns: runs, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: false });

describe("contract-driven hostile input", () => {
  it("covers every operation of the contract", () => {
    // The operations come from the contract itself; this guards against the list ever coming up empty.
    expect(operations.length).toBeGreaterThanOrEqual(37);
    for (const op of operations) expect(() => validRequest(op)).not.toThrow();
  });

  describe.each(operations.map((o) => [o.operationId.replace(/^svc\.api\./, ""), o] as const))("%s", (_, op) => {
    it("valid requests are never answered 5xx", async () => {
      await fc.assert(
        fc.asyncProperty(validRequest(op), (request) =>
          counts.check(async () => {
            const answer = await send(op, request);
            expect(answer.status, describeAnswer(answer)).toBeLessThan(500);
            expect(responseErrors(op.operationId, answer.status, parsed(answer)), describeAnswer(answer)).toEqual([]);
          }),
        ),
        options(RUNS),
      );
      await expectStillUp();
    }, 300_000);

    it("broken requests are answered 4xx with the contract's error body", async () => {
      await fc.assert(
        fc.asyncProperty(brokenRequest(op), (request) =>
          counts.check(async () => {
            const answer = await send(op, request);
            expect(answer.status >= 400 && answer.status < 500, describeAnswer(answer)).toBe(true);
            const body = parsed(answer);
            // The Status members (the token endpoint's OAuth error adds `error` and `error_description`).
            expect(body, describeAnswer(answer)).toMatchObject({ code: expect.any(Number), message: expect.any(String), details: expect.any(Array) });
            expect(responseErrors(op.operationId, answer.status, body), describeAnswer(answer)).toEqual([]);
          }),
        ),
        options(RUNS * 2),
      );
      await expectStillUp();
    }, 300_000);
  });
});
