// Traces, as a collector receives them: server processes export over OTLP/HTTP (protobuf, the
// default) to a receiver in this test, two instances on one database (SQLite, or PostgreSQL in that
// leg). A request's span is named by its operation and carries its status and reason; database
// transactions are its children; a caller's traceparent is continued only from a trusted peer
// (TRACE_CONTEXT_TRUSTED, by default TRUST_PROXY's) for a request that authenticated, else a new
// trace starts, linked to the caller's, its tracestate not exported and its sampled flag not
// followed; a malformed traceparent is ignored; the execution of an accepted webhook event
// continues the accepting request's trace, also when another instance runs it; log lines carry the trace (and an untraced server's carry none);
// tracing enables no AsyncLocalStorage nor async hook; nothing exported names a secret or an id;
// a collector that does not answer costs requests nothing.
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hmacSignature } from "../../../src/client/webhook-sender.js";
import { ConfigError, loadConfig } from "../../../src/config.js";
import { EXECUTION_SPAN } from "../../../src/automations/worker.js";
import { tracingOn } from "../../../src/core/spans.js";
import { UNMATCHED_SPAN } from "../../../src/http/request-span.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../../support/database.js";
import { startOtlpReceiver, SpanKind, StatusCode, type OtlpReceiver, type ReceivedSpan } from "../../support/otlp-receiver.js";
import { runToEnd, terminate, type Served } from "../../support/process.js";
import { startTestServer } from "../../support/server.js";
import { rawRequest } from "../../support/raw-http.js";
import { root, serveRelease, TEST_SECRETS_KEY } from "../../support/release.js";

const ADMIN = { clientId: "tracing-admin", clientSecret: "tracing-admin-secret-0123456789" };
const BASE_URL = "http://tenant.example.test";
const RECEIVE = "svc.api.webhooks.v1.IncomingWebhookService.Receive";
const DB_SYSTEM = testDialect() === "postgres" ? "postgresql" : "sqlite";
/** The test's own address (fetch's), the one peer the traced servers trust with their trace context. */
const TRUSTED = "127.0.0.1";
/** Another address of the loopback, which no server here trusts: requests sent from it (rawRequest's `from`). */
const UNTRUSTED = "127.0.0.2";

const dir = mkdtempSync(join(tmpdir(), "tenant-tracing-"));
let receiver: OtlpReceiver;
let database: TestDatabase;
/** The untraced server's own: its worker must not run the traced servers' executions, unseen. */
let untracedDatabase: TestDatabase;
/** Exports every 100 ms: what the tests read. */
let server: Served;
/** Exports only when it shuts down (its batch delay is an hour): the flush at shutdown is what brings its spans. */
let accepting: Served;
/** Traces off: no OTEL_* variable. */
let untraced: Served;
let token: string;
let untracedToken: string;

/** Preloaded into every server here: reports on stderr an AsyncLocalStorage or async hook enabled (test/support/async-hook-probe.mjs). */
const PROBE = { NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${pathToFileURL(join(import.meta.dirname, "../../support/async-hook-probe.mjs")).href}`].filter(Boolean).join(" ") };
const PROBE_ARMED = "async-hook-probe: armed";
const PROBE_REPORT = /async-hook-probe: .* enabled/;

function startOne(env: Record<string, string>, on: TestDatabase = database): Promise<Served> {
  return serveRelease({
    ...PROBE,
    BASE_URL,
    DATABASE_URL: on.url,
    SECRETS_KEY: TEST_SECRETS_KEY,
    BOOTSTRAP_CLIENT_ID: ADMIN.clientId,
    BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret,
    LOG_LEVEL: "info",
    RATE_LIMIT: "off",
    SHUTDOWN_DRAIN_SECONDS: "0",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: "100",
    TRACE_CONTEXT_TRUSTED: `${TRUSTED}/32`,
    ...env,
  });
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  database = await createTestDatabase(dir);
  server = await startOne({ OTEL_SERVICE_NAME: "tenant-api-traced", OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test", NOTIFICATION_ALLOW_INSECURE: "1" });
  accepting = await startOne({ OTEL_BSP_SCHEDULE_DELAY: "3600000", SHUTDOWN_DRAIN_SECONDS: "5" });
  untracedDatabase = await createTestDatabase(mkdtempSync(join(dir, "untraced-")));
  untraced = await startOne({ OTEL_EXPORTER_OTLP_ENDPOINT: "" }, untracedDatabase);
  token = await adminToken(server);
  untracedToken = await adminToken(untraced);
}, 180_000);

async function adminToken(of: Served): Promise<string> {
  const answer = await fetch(`${of.url}/auth/v1/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: ADMIN.clientId, client_secret: ADMIN.clientSecret }),
  });
  return ((await answer.json()) as { access_token: string }).access_token;
}

afterAll(async () => {
  await Promise.all([server, accepting, untraced].filter(Boolean).map((s) => s.stop()));
  await receiver?.close();
  await database?.drop();
  await untracedDatabase?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** A call as the admin, with `headers` on top (a traceparent); answers the status, the parsed body and the request id. */
async function call(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as any, requestId: response.headers.get("x-request-id") ?? "" };
}

const traceparent = (traceId = randomUUID().replaceAll("-", ""), spanId = randomUUID().replaceAll("-", "").slice(0, 16)) => ({ traceId, spanId, header: `00-${traceId}-${spanId}-01` });
type Caller = ReturnType<typeof traceparent>;

/** A `tracestate` of one member whose value is unique: found in the exported bytes if it reached them. */
const tracestate = () => {
  const marker = `m${randomUUID().replaceAll("-", "")}`;
  return { marker, header: `congo=${marker}` };
};

/** Whether some exported payload holds `text`. */
const inExportedBytes = (text: string) => Buffer.concat(receiver.payloads).includes(text);

/** The one span of `traceId` named `name` (waits for it). */
async function spanOf(traceId: string, name: string, timeoutMs?: number): Promise<ReceivedSpan> {
  const [span] = await receiver.waitFor((spans) => {
    const found = spans.filter((s) => s.traceId === traceId && s.name === name);
    return found.length > 0 ? found : undefined;
  }, timeoutMs);
  return span!;
}

const linksTo = (span: ReceivedSpan, caller: Caller) => span.links.some((l) => l.traceId === caller.traceId && l.spanId === caller.spanId);

/** The span named `name` of a request whose caller's context was not continued: a root of a new trace, linked to the caller's span (waits for it). */
async function notContinued(caller: Caller, name: string): Promise<ReceivedSpan> {
  const [span] = await receiver.waitFor((spans) => {
    const found = spans.filter((s) => s.name === name && linksTo(s, caller));
    return found.length > 0 ? found : undefined;
  });
  expect(span!.traceId).not.toBe(caller.traceId);
  expect(span!.parentSpanId).toBe("");
  expect(span!.links).toEqual([{ traceId: caller.traceId, spanId: caller.spanId }]);
  expect(receiver.spans.filter((s) => s.traceId === caller.traceId)).toEqual([]);
  return span!;
}

async function hmacAutomation(automationSteps: unknown[] = [{ stepName: "calc", evaluateExpressions: { expressions: [{ name: "n", expression: "ctx.trigger.n * 2.0" }] } }]): Promise<{ path: string; secret: string; id: string }> {
  const created = await call(server.url, "POST", "/api/v1/automations", {
    automation: { displayName: `traced ${randomUUID()}`, isDraft: false, enabled: true, triggers: [{ webhook: { hmac: {} } }], automationSteps },
  });
  expect(created.status).toBe(200);
  return { path: new URL(created.body.automation.triggers[0].webhook.url as string).pathname, secret: created.body.webhookSecret as string, id: created.body.automation.id as string };
}

/** A delivery signed with `secret`, sent from `from` (the test's own address unless given). */
async function deliver(url: string, secret: string, body: string, headers: Record<string, string> = {}, from?: string) {
  const eventId = randomUUID();
  const timestamp = String(Math.floor(Date.now() / 1000));
  const { origin, pathname } = new URL(url);
  const signed = { "Content-Type": "application/json", "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId, "Webhook-Signature": hmacSignature(secret, timestamp, eventId, body), ...headers };
  const answer = await rawRequest(origin, "POST", pathname, signed, Buffer.from(body), from);
  return { status: answer.status, eventId, body: JSON.parse(answer.text) as any };
}

describe(`traces over OTLP/HTTP, on ${testDialect()}`, () => {
  it("a request's span: SERVER, named by its operation id, with the method, the route's template, the status and the refusal's reason", async () => {
    const parent = traceparent();
    const missing = `usr_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const answer = await call(server.url, "GET", `/api/v1/users/${missing}`, undefined, { traceparent: parent.header });
    expect(answer.status).toBe(404);
    const span = await spanOf(parent.traceId, "svc.api.iam.v1.UserService.Get");
    expect(span.kind).toBe(SpanKind.SERVER);
    expect(span.attributes).toEqual({ "http.request.method": "GET", "http.route": "/api/v1/users/{user_id}", "http.response.status_code": 404, "error.type": "USER_NOT_FOUND" });
    // A refusal is the caller's error, not the server's.
    expect(span.status.code).toBe(StatusCode.UNSET);
    expect(JSON.stringify(span)).not.toContain(missing);

    // No operation took it, none authenticated it: a trace of its own.
    const unmatched = traceparent();
    expect((await call(server.url, "GET", "/api/v1/no-such-route", undefined, { traceparent: unmatched.header })).status).toBe(404);
    const other = await notContinued(unmatched, UNMATCHED_SPAN);
    expect(other.attributes).toEqual({ "http.request.method": "GET", "http.response.status_code": 404, "error.type": "ROUTE_NOT_FOUND" });
  });

  it("a trusted peer's traceparent and tracestate are continued by a request that authenticated; a malformed traceparent is ignored (a new trace)", async () => {
    const parent = traceparent();
    const state = tracestate();
    expect((await call(server.url, "GET", "/api/v1/users?page_size=1", undefined, { traceparent: parent.header, tracestate: state.header })).status).toBe(200);
    const continued = await spanOf(parent.traceId, "svc.api.iam.v1.UserService.List");
    expect(continued.parentSpanId).toBe(parent.spanId);
    expect(continued.links).toEqual([]);
    // A trusted caller's tracestate is carried on: the scans of the tests below would see one that was.
    expect(inExportedBytes(state.marker)).toBe(true);

    for (const malformed of [`00-${"0".repeat(32)}-${parent.spanId}-01`, `00-${parent.traceId}-${parent.spanId}`, `zz-${parent.traceId}-${parent.spanId}-01`]) {
      const seenBefore = receiver.spans.length;
      const { requestId } = await call(server.url, "GET", "/api/v1/users?page_size=2", undefined, { traceparent: malformed });
      // Its span: the List span received after this call, traced under a trace of its own.
      const [span] = await receiver.waitFor((spans) => {
        const found = spans.slice(seenBefore).filter((s) => s.name === "svc.api.iam.v1.UserService.List");
        return found.length > 0 ? found : undefined;
      });
      expect(requestId).not.toBe("");
      expect(span!.traceId).not.toBe(parent.traceId);
      expect(span!.traceId).not.toBe("0".repeat(32));
      expect(span!.parentSpanId).toBe("");
    }
  });

  it("from a peer TRACE_CONTEXT_TRUSTED does not name, an authenticated request starts a trace of its own, linked to the caller's span, without its tracestate", async () => {
    const caller = traceparent();
    const state = tracestate();
    const answer = await rawRequest(server.url, "GET", "/api/v1/users?page_size=1", { Authorization: `Bearer ${token}`, traceparent: caller.header, tracestate: state.header }, undefined, UNTRUSTED);
    expect(answer.status).toBe(200);
    await notContinued(caller, "svc.api.iam.v1.UserService.List");
    expect(inExportedBytes(state.marker)).toBe(false);
  });

  it("from a trusted peer, a request that did not authenticate starts a trace of its own: no token, a bad token, a webhook delivery with a bad signature, a wrong client secret", async () => {
    const automation = await hmacAutomation();
    // The token with its signature's last characters changed.
    const badToken = token.slice(0, -2) + (token.endsWith("xx") ? "yy" : "xx");
    const attempts: Array<[string, (headers: Record<string, string>) => Promise<number>]> = [
      ["svc.api.iam.v1.UserService.List", (headers) => fetch(`${server.url}/api/v1/users`, { headers }).then((r) => r.status)],
      ["svc.api.iam.v1.UserService.List", (headers) => fetch(`${server.url}/api/v1/users`, { headers: { Authorization: `Bearer ${badToken}`, ...headers } }).then((r) => r.status)],
      [RECEIVE, async (headers) => (await deliver(server.url + automation.path, `not-the-secret-${randomUUID()}`, JSON.stringify({ n: 1 }), headers)).status],
      [
        "svc.api.iam.v1.TokenService.CreateToken",
        (headers) =>
          fetch(`${server.url}/auth/v1/token`, {
            method: "POST",
            headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
            body: new URLSearchParams({ grant_type: "client_credentials", client_id: ADMIN.clientId, client_secret: `wrong-${randomUUID()}` }),
          }).then((r) => r.status),
      ],
    ];
    for (const [name, attempt] of attempts) {
      const caller = traceparent();
      const state = tracestate();
      expect(await attempt({ traceparent: caller.header, tracestate: state.header }), name).toBe(401);
      await notContinued(caller, name);
      expect(inExportedBytes(state.marker), name).toBe(false);
    }
  });

  it("a webhook delivery from an untrusted peer: its event's execution continues the accepting request's own trace, not the caller's", async () => {
    const automation = await hmacAutomation();
    const caller = traceparent();
    const delivered = await deliver(server.url + automation.path, automation.secret, JSON.stringify({ n: 4 }), { traceparent: caller.header }, UNTRUSTED);
    expect(delivered.status).toBe(200);
    const request = await notContinued(caller, RECEIVE);
    // The traceparent stored with the execution is the request's span's, this server's.
    const execution = await spanOf(request.traceId, EXECUTION_SPAN);
    expect(execution.parentSpanId).toBe(request.spanId);
  });

  it(`database transactions are child spans of the request's (db.system.name ${DB_SYSTEM}), their statements never recorded`, async () => {
    /** The transactions of the request's trace, all children of its span and within its time. */
    const childTransactions = async (request: ReceivedSpan) => {
      const transactions = await receiver.waitFor((spans) => {
        const found = spans.filter((s) => s.traceId === request.traceId && s.name === "db.transaction");
        return found.length > 0 ? found : undefined;
      });
      // Each span reads the wall clock for itself, to the millisecond.
      const ms = 1_000_000n;
      for (const t of transactions) {
        expect(t.parentSpanId).toBe(request.spanId);
        expect(t.kind).toBe(SpanKind.INTERNAL);
        expect(t.attributes).toEqual({ "db.system.name": DB_SYSTEM });
        expect(BigInt(t.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(request.startTimeUnixNano) - ms);
        expect(BigInt(t.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(request.endTimeUnixNano) + ms);
      }
    };
    /** The request's span, named `operation`, continuing `parent`. */
    const continuing = async (parent: Caller, operation: string) => {
      const request = await spanOf(parent.traceId, operation);
      expect(request.parentSpanId).toBe(parent.spanId);
      return request;
    };
    const parent = traceparent();
    const email = `traced-${randomUUID()}@example.com`;
    const created = await call(server.url, "POST", "/api/v1/users", { displayName: "Traced", email, roles: ["ROLE_USER"] }, { traceparent: parent.header });
    expect(created.status).toBe(200);
    await childTransactions(await continuing(parent, "svc.api.iam.v1.UserService.Create"));

    // Each operation hands its request's span to the services it calls, down to their transactions:
    // an options object, an idempotency record, a refusal's throttle.
    const userId = created.body.user.id as string;
    const credentialCreate = traceparent();
    const credential = await call(server.url, "POST", `/api/v1/users/${userId}/credentials`, {}, { traceparent: credentialCreate.header, "Idempotency-Key": randomUUID() });
    expect(credential.status).toBe(200);
    await childTransactions(await continuing(credentialCreate, "svc.api.iam.v1.CredentialService.Create"));
    const revoke = traceparent();
    expect((await call(server.url, "POST", `/api/v1/users/${userId}/credentials/${credential.body.credential.id}/revoke`, {}, { traceparent: revoke.header })).status).toBe(200);
    await childTransactions(await continuing(revoke, "svc.api.iam.v1.CredentialService.Revoke"));
    const refused = traceparent();
    const wrongSecret = await fetch(`${server.url}/auth/v1/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", traceparent: refused.header },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: credential.body.credential.clientId, client_secret: `wrong-${randomUUID()}` }),
    });
    expect(wrongSecret.status).toBe(401);
    // Refused, it does not continue the caller's trace; the throttle's transactions are in its own.
    await childTransactions(await notContinued(refused, "svc.api.iam.v1.TokenService.CreateToken"));
    // A token request continues the caller's trace once the credentials proved right: its span
    // starts then, at the request's arrival, and the throttle's transaction made before the check
    // is its child, at its own time.
    const issued = traceparent();
    const granted = await fetch(`${server.url}/auth/v1/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", traceparent: issued.header },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: ADMIN.clientId, client_secret: ADMIN.clientSecret }),
    });
    expect(granted.status).toBe(200);
    await childTransactions(await continuing(issued, "svc.api.iam.v1.TokenService.CreateToken"));
  });

  it("an accepted event's execution is a child span of the accepting request, with the intake's own transactions", async () => {
    const automation = await hmacAutomation();
    const parent = traceparent();
    const delivered = await deliver(server.url + automation.path, automation.secret, JSON.stringify({ n: 21 }), { traceparent: parent.header });
    expect(delivered.status).toBe(200);
    const request = await spanOf(parent.traceId, RECEIVE);
    expect(request.attributes).toMatchObject({ "http.route": "/api/v1/webhooks/incoming/{listener_id}", "http.response.status_code": 200 });
    const execution = await spanOf(parent.traceId, EXECUTION_SPAN);
    expect(execution.parentSpanId).toBe(request.spanId);
    expect(execution.kind).toBe(SpanKind.CONSUMER);
    expect(execution.resource["service.instance.id"]).toBe(request.resource["service.instance.id"]);
    const transactions = receiver.spans.filter((s) => s.traceId === parent.traceId && s.name === "db.transaction");
    // The event's record under the request; the run's save under the run.
    expect(transactions.some((t) => t.parentSpanId === request.spanId)).toBe(true);
    await receiver.waitFor((spans) => {
      const found = spans.filter((s) => s.traceId === parent.traceId && s.name === "db.transaction" && s.parentSpanId === execution.spanId);
      return found.length > 0 ? found : undefined;
    });
  });

  it("each attempt of a notify step is a CLIENT span of the execution, naming the host and port only, and its request sends that span's traceparent", async () => {
    const received: string[] = [];
    const partner = createHttpServer((req, res) => (received.push(String(req.headers.traceparent)), req.resume().on("end", () => res.writeHead(204).end())));
    partner.listen(0, "127.0.0.1");
    await once(partner, "listening");
    try {
      const port = (partner.address() as AddressInfo).port;
      const automation = await hmacAutomation([{ stepName: "tell", notify: { url: `http://127.0.0.1:${port}/hooks/t0ken-in-path?key=s3cret`, bodyCel: '{"n": ctx.trigger.n}' } }]);
      const parent = traceparent();
      expect((await deliver(server.url + automation.path, automation.secret, JSON.stringify({ n: 7 }), { traceparent: parent.header })).status).toBe(200);
      const execution = await spanOf(parent.traceId, EXECUTION_SPAN);
      const attempt = await spanOf(parent.traceId, "POST");
      expect(attempt).toMatchObject({ kind: SpanKind.CLIENT, parentSpanId: execution.spanId });
      expect(attempt.attributes).toEqual({ "http.request.method": "POST", "server.address": "127.0.0.1", "server.port": port, "http.request.resend_count": 0, "http.response.status_code": 204 });
      expect(received).toEqual([`00-${parent.traceId}-${attempt.spanId}-01`]);
      expect(inExportedBytes("t0ken-in-path") || inExportedBytes("s3cret")).toBe(false);
    } finally {
      partner.close();
    }
  });

  it("log lines written during a traced request carry its trace_id and span_id", async () => {
    const parent = traceparent();
    const { requestId } = await call(server.url, "GET", "/api/v1/users?page_size=1", undefined, { traceparent: parent.header });
    const span = await spanOf(parent.traceId, "svc.api.iam.v1.UserService.List");
    const lines = server
      .output()
      .split("\n")
      .filter((l) => l.includes(requestId))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatchObject({ trace_id: parent.traceId, span_id: span.spanId });
  });

  it("an untraced server's log lines carry no trace fields, even for a request that sends a traceparent", async () => {
    const parent = traceparent();
    const answers = [
      await call(untraced.url, "GET", "/api/v1/users?page_size=1", undefined, { Authorization: `Bearer ${untracedToken}`, traceparent: parent.header }),
      await call(untraced.url, "GET", `/api/v1/users/usr_${randomUUID().replaceAll("-", "").slice(0, 16)}`, undefined, { Authorization: `Bearer ${untracedToken}` }),
    ];
    // Written once each answer is sent, read from the process's output a moment later.
    const linesOf = () =>
      untraced
        .output()
        .split("\n")
        .filter((l) => answers.some((a) => l.includes(a.requestId)))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    for (let i = 0; i < 100 && linesOf().length < answers.length; i++) await new Promise((r) => setTimeout(r, 50));
    const lines = linesOf();
    expect(lines.length).toBe(answers.length);
    for (const line of lines) {
      expect(line).not.toHaveProperty("trace_id");
      expect(line).not.toHaveProperty("span_id");
    }
  });

  it("an event accepted by an instance that is stopping runs on the other, in the accepting request's trace; the stopping one's spans are flushed at its shutdown", async () => {
    const automation = await hmacAutomation();
    const stopped = terminate(accepting.child);
    // In the drain it still serves, and its worker no longer runs anything: the event is recorded pending.
    for (let i = 0; i < 100 && (await fetch(`${accepting.url}/readyz`)).status !== 503; i++) await new Promise((r) => setTimeout(r, 50));
    const parent = traceparent();
    const delivered = await deliver(accepting.url + automation.path, automation.secret, JSON.stringify({ n: 2 }), { traceparent: parent.header });
    expect(delivered.status).toBe(200);
    // Run by the other instance's next poll, exported with its next batch: on a loaded machine, more than the default wait.
    const execution = await spanOf(parent.traceId, EXECUTION_SPAN, 40_000);
    expect((await stopped).code).toBe(0);
    // Exported only by the flush at shutdown: its batch delay is an hour.
    const request = await spanOf(parent.traceId, RECEIVE);
    expect(execution.parentSpanId).toBe(request.spanId);
    expect(request.resource["service.instance.id"]).not.toBe(execution.resource["service.instance.id"]);
    // The standard resource variables name the service (the running one sets them; the stopping one leaves the default).
    expect(request.resource["service.name"]).toBe("tenant-api");
    expect(execution.resource).toMatchObject({ "service.name": "tenant-api-traced", "deployment.environment.name": "test" });
    // Its /readyz answered 503 in the drain: a 5xx fails the span.
    const stopping = receiver.spans.filter((s) => s.resource["service.instance.id"] === request.resource["service.instance.id"] && s.name === UNMATCHED_SPAN && s.attributes["http.response.status_code"] === 503);
    expect(stopping.length).toBeGreaterThan(0);
    for (const span of stopping) expect(span.status.code).toBe(StatusCode.ERROR);
  }, 90_000);

  it("nothing exported names a secret, a token, an email address, an id or a body of the run", async () => {
    const secrets: string[] = [ADMIN.clientSecret, token];
    const ids: string[] = [];
    const email = `secret-person-${randomUUID()}@example.com`;
    const user = await call(server.url, "POST", "/api/v1/users", { displayName: "Secret Person", email, roles: ["ROLE_USER", "ROLE_FUND_ADMIN"] });
    const userId = user.body.user.id as string;
    ids.push(userId, user.requestId);
    const credential = await call(server.url, "POST", `/api/v1/users/${userId}/credentials`, {});
    secrets.push(credential.body.clientSecret, credential.body.credential.clientId);
    ids.push(credential.body.credential.id);
    const theirToken = await fetch(`${server.url}/auth/v1/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: credential.body.credential.clientId, client_secret: credential.body.clientSecret }),
    });
    secrets.push(((await theirToken.json()) as { access_token: string }).access_token);
    // A wrong secret: refused, and not exported either.
    const guess = `wrong-secret-${randomUUID()}`;
    secrets.push(guess);
    await fetch(`${server.url}/auth/v1/token`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ grant_type: "client_credentials", client_id: ADMIN.clientId, client_secret: guess }) });

    const appId = `app-secret-${randomUUID().slice(0, 8)}`;
    const reason = `reason-${randomUUID()}`;
    ids.push(appId, reason);
    expect((await call(server.url, "POST", `/api/v1/funds/subject-app-limits/${userId}/${appId}/limit`, { limit: { amount: { money: { currencyCode: "USD", units: "100", nanos: 0 } } }, period: "PERIOD_KIND_MONTHLY" })).status).toBe(200);
    expect((await call(server.url, "GET", `/api/v1/funds/subject-app-limits/${userId}/${appId}`)).status).toBe(200);
    expect((await call(server.url, "GET", `/api/v1/funds/subject-app-limits/${userId}/${appId}/effective`)).status).toBe(200);
    const idempotencyKey = randomUUID();
    ids.push(idempotencyKey);
    const metadataMarker = `metadata-${randomUUID()}`;
    ids.push(metadataMarker);
    const authorized = await call(server.url, "POST", "/api/v1/funds/spend-authorizations", { userId, appId, amount: { currencyCode: "USD", units: "15", nanos: 0 }, metadata: { note: metadataMarker } }, { "Idempotency-Key": idempotencyKey });
    expect(authorized.status).toBe(200);
    ids.push(authorized.body.authorization.id);
    expect((await call(server.url, "POST", `/api/v1/funds/spend-authorizations/${authorized.body.authorization.id}/capture`, { amount: { currencyCode: "USD", units: "12", nanos: 0 } })).status).toBe(200);
    expect((await call(server.url, "POST", `/api/v1/funds/subject-app-limits/${userId}/${appId}/suspension`, { reason })).status).toBe(200);

    const automation = await hmacAutomation();
    ids.push(automation.id, automation.path.split("/").at(-1)!);
    secrets.push(automation.secret);
    const rotated = await call(server.url, "POST", `/api/v1/automations/${automation.id}/webhook-secret`, {});
    secrets.push(rotated.body.webhookSecret);
    const bodyMarker = `body-${randomUUID()}`;
    const traced = traceparent();
    const delivered = await deliver(server.url + automation.path, rotated.body.webhookSecret, JSON.stringify({ n: 1, who: email, marker: bodyMarker }), { traceparent: traced.header });
    expect(delivered.status).toBe(200);
    ids.push(delivered.eventId, delivered.body.automationExecutionId, bodyMarker);
    // A delivery with a bad signature, refused.
    expect((await deliver(server.url + automation.path, `not-the-secret-${randomUUID()}`, JSON.stringify({ marker: bodyMarker }))).status).toBe(401);
    await call(server.url, "GET", `/api/v1/automation_executions?automation_id=${automation.id}`);

    // The run's last span, the execution's, has been exported; and whatever was still queued with it.
    await spanOf(traced.traceId, EXECUTION_SPAN);
    await new Promise((r) => setTimeout(r, 500));
    const exported = Buffer.concat(receiver.payloads);
    const decoded = JSON.stringify(receiver.spans);
    for (const value of [...secrets, ...ids, email].filter((v) => v)) {
      expect(exported.includes(value), `exported bytes hold ${value}`).toBe(false);
      expect(decoded.includes(value), `decoded spans hold ${value}`).toBe(false);
    }
  });

  // Last: after the tests above made every kind of span, on both traced servers (the stopping one
  // has exited: its check at exit ran too). On Node 20 an enabled AsyncLocalStorage makes Node call
  // a hook at every promise the process creates, traced or not: what tracing would cost were its spans
  // not carried explicitly (bench/RESULTS.md, "Metrics and traces").
  it("tracing enables no AsyncLocalStorage, no async hook and no global context manager", async () => {
    for (const served of [server, accepting, untraced]) {
      expect(served.output()).toContain(PROBE_ARMED);
      expect(served.output()).not.toMatch(PROBE_REPORT);
    }
  });
});

describe.each([
  ["parentbased_always_off", {}],
  ["parentbased_traceidratio", { OTEL_TRACES_SAMPLER_ARG: "0" }],
])("under %s (keeping no new trace), a caller's sampled flag", (sampler, env) => {
  let strict: Served;
  /** Its own: its worker must not run the other servers' executions. */
  let strictDatabase: TestDatabase;
  let bearer: string;
  beforeAll(async () => {
    strictDatabase = await createTestDatabase(mkdtempSync(join(dir, "strict-")));
    // TRACE_CONTEXT_TRUSTED unset: the peers trusted are TRUST_PROXY's, the test's address.
    strict = await startOne({ OTEL_TRACES_SAMPLER: sampler, ...env, TRACE_CONTEXT_TRUSTED: "", TRUST_PROXY: `${TRUSTED}/32` }, strictDatabase);
    bearer = await adminToken(strict);
  }, 120_000);
  afterAll(async () => {
    await strict?.stop();
    await strictDatabase?.drop();
  });

  it("is not followed from an untrusted peer, nor from a trusted one without authentication; it is from a trusted peer that authenticated", async () => {
    const untrusted = traceparent();
    const unauthenticated = traceparent();
    const trusted = traceparent();
    const list = "/api/v1/users?page_size=1";
    expect((await rawRequest(strict.url, "GET", list, { Authorization: `Bearer ${bearer}`, traceparent: untrusted.header }, undefined, UNTRUSTED)).status).toBe(200);
    expect((await fetch(strict.url + list, { headers: { traceparent: unauthenticated.header } })).status).toBe(401);
    expect((await fetch(strict.url + list, { headers: { Authorization: `Bearer ${bearer}`, traceparent: trusted.header } })).status).toBe(200);
    const followed = await spanOf(trusted.traceId, "svc.api.iam.v1.UserService.List");
    expect(followed.parentSpanId).toBe(trusted.spanId);
    // Spans are exported in the order they ended: had the first two been sampled, they would be here by now.
    const forced = receiver.spans.filter((s) => [untrusted, unauthenticated].some((caller) => s.traceId === caller.traceId || linksTo(s, caller)));
    expect(forced).toEqual([]);
  });
});

describe("the async hook probe the traced servers run with", () => {
  it("reports an AsyncLocalStorage, an async hook and an OpenTelemetry context manager, which a traced server must not enable", async () => {
    const script = [
      "new (require('node:async_hooks').AsyncLocalStorage)().run(1, () => {});",
      "require('node:async_hooks').createHook({ init() {} }).enable();",
      "const manager = { enable() { return this; }, disable() { return this; }, active() {}, with() {}, bind() {} };",
      "require('@opentelemetry/api').context.setGlobalContextManager(manager);",
    ].join("\n");
    const run = await runToEnd(process.execPath, ["-e", script], PROBE, { cwd: root });
    expect(run.code).toBe(0);
    for (const what of ["an AsyncLocalStorage", "an async hook", "an OpenTelemetry context manager"]) expect(run.out).toContain(`async-hook-probe: ${what} enabled`);
  });
});

describe("a collector that does not answer", () => {
  let silent: Server;
  let port: number;
  const held = new Set<Socket>();
  beforeAll(async () => {
    // Accepts connections and never answers: the worst a collector can do.
    silent = createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    port = (silent.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it("fails no request, and delays the shutdown by the flush's bound, not by the exporter's timeout", async () => {
    // An export would wait 60 s for the collector; the flush at shutdown gives up after TRACES_FLUSH_MS (2 s).
    const stuck = await startOne({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: "60000" });
    // Past the batch delay: exports are under way (and hang) while requests go on. A request held by
    // the hung export would wait its 60 s: 20 s tells it from a loaded machine's slow answer.
    for (let i = 0; i < 20; i++) {
      const answer = await fetch(`${stuck.url}/api/v1/users?page_size=1`, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(20_000) });
      expect(answer.status).toBe(200);
      await new Promise((r) => setTimeout(r, 50));
    }
    const signalled = performance.now();
    const { code } = await terminate(stuck.child);
    expect(code).toBe(0);
    // The flush gave up at its bound, where the exporter would have waited out its own timeout:
    // the whole shutdown (its drain included, under a loaded test run) took well under that timeout.
    expect(stuck.output()).toContain("traces not flushed at shutdown");
    expect(performance.now() - signalled).toBeLessThan(30_000);
  }, 90_000);
});

describe("a collector that refuses connections", () => {
  it("fails no request; failed exports are logged, once a minute at most", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await startOne({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_TRACES_SAMPLER: "always_on" });
    try {
      const bearer = await adminToken(refused);
      for (let i = 0; i < 3; i++) {
        const answer = await fetch(`${refused.url}/api/v1/users?page_size=1`, { headers: { Authorization: `Bearer ${bearer}` } });
        expect(answer.status).toBe(200);
        await new Promise((r) => setTimeout(r, 400));
      }
      const deadline = Date.now() + 20_000;
      while (!refused.output().includes('"traces not exported"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(refused.output().match(/"traces not exported"/g)).toHaveLength(1);
    } finally {
      await refused.stop();
    }
  });
});

describe("the OTEL_* configuration", () => {
  it("leaves traces off without an OTLP endpoint, or with OTEL_SDK_DISABLED=true", () => {
    expect(loadConfig({}).tracing).toBeNull();
    expect(loadConfig({ OTEL_TRACES_SAMPLER: "always_on" }).tracing).toBeNull();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }).tracing).toBeNull();
  });

  it("reads the standard variables: the endpoint (with /v1/traces) or the traces endpoint as given, the protocol, the sampler and its ratio", () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }).tracing).toEqual({ url: "http://collector:4318/v1/traces", protocol: "http/protobuf", sampler: "parentbased_always_on", ratio: 1, batchDelayMs: 200 });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector.example.com/otlp/traces",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0.1",
      }).tracing,
    ).toEqual({ url: "https://collector.example.com/otlp/traces", protocol: "http/json", sampler: "parentbased_traceidratio", ratio: 0.1, batchDelayMs: 200 });
  });

  it("refuses a bad value with a ConfigError naming its variable, instead of the SDK's fallback of keeping every trace", () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    for (const [name, value] of [
      ["OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"],
      ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://collector:4317"],
      ["OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"],
      ["OTEL_TRACES_SAMPLER", "parentbased_ratio"],
      ["OTEL_TRACES_SAMPLER_ARG", "10%"],
      ["OTEL_TRACES_SAMPLER_ARG", "1.5"],
      ["OTEL_BSP_SCHEDULE_DELAY", "0"],
      ["OTEL_BSP_SCHEDULE_DELAY", "5s"],
    ] as const) {
      const env = { ...on, OTEL_TRACES_SAMPLER: "traceidratio", [name]: value };
      expect(() => loadConfig(env), name).toThrow(ConfigError);
      expect(() => loadConfig(env), name).toThrow(name);
    }
  });
});

describe("TRACE_CONTEXT_TRUSTED", () => {
  it("is a list of CIDRs or addresses, or none; unset, TRUST_PROXY's proxies are trusted; a bad entry is a ConfigError naming it", () => {
    expect(loadConfig({}).traceContextTrusted).toBeNull();
    expect(loadConfig({ TRACE_CONTEXT_TRUSTED: "10.0.0.0/8, 192.0.2.7,fd00::/8" }).traceContextTrusted).toEqual(["10.0.0.0/8", "192.0.2.7/32", "fd00::/8"]);
    expect(loadConfig({ TRACE_CONTEXT_TRUSTED: "none", TRUST_PROXY: "10.0.0.0/8" }).traceContextTrusted).toEqual([]);
    for (const bad of ["10.0.0.1/8", "proxy.internal", "10.0.0.0/8,"]) {
      expect(() => loadConfig({ TRACE_CONTEXT_TRUSTED: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ TRACE_CONTEXT_TRUSTED: bad }), bad).toThrow(/^TRACE_CONTEXT_TRUSTED entry \d/);
    }
  });
});

describe("a start that fails after traces began", () => {
  it("stops them: a process that goes on (a test, an embedding) is left untraced", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const port = String((taken.address() as { port: number }).port);
      const receiver = await startOtlpReceiver();
      try {
        await expect(startTestServer({ PORT: port, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })).rejects.toThrow(/EADDRINUSE/);
        expect(tracingOn()).toBe(false);
      } finally {
        await receiver.close();
      }
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});
