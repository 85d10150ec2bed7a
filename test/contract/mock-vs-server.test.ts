// The mock refuses what the real server refuses, in the same words. The same invalid requests go to
// the mock (`npm run mock`) and to a real server, with the same X-Request-Id; both answers must be
// identical (status, X-Request-Id, and the whole Status body: code, message, reason, field
// violations), except for the cases docs/partners.md's "What the mock cannot reproduce" table names: for
// those, the test checks that the answers differ exactly as the table says. A row naming no case
// here fails too, so the documentation and this list cannot drift apart.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hmacSignature } from "../../src/client/webhook-sender.js";
import { createHooked, type Hooked } from "../http/webhooks/helpers.js";
import { example200 } from "../support/example-keys.js";
import type { Served } from "../support/process.js";
import { rawRequest, type RawAnswer } from "../support/raw-http.js";
import { startMock } from "../support/mock.js";
import { SENDER_KINDS, SENDER_OPERATIONS, senderBody, senderHeaders, senderListeners, type SenderKind, type SenderListener } from "../support/sender-deliveries.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../support/server.js";

interface Case {
  method: string;
  /** Request target; `{listener}` is replaced by the path of the server's HMAC listener, `{github}` (a SenderKind) by that of its listener of the kind. */
  target: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the request twice and compare the second answers (a repeated event id). */
  twice?: boolean;
}

/** The documented table's rows: case name → the answers it states for the mock and for the server. */
interface StatedDifference {
  mock: { status: number; reason?: string };
  server: { status: number; reason?: string };
}

const PARTNERS = readFileSync(new URL("../../docs/partners.md", import.meta.url), "utf8");

/** `200` or ``400 `CURRENCY_MISMATCH` `` → status and reason. */
function statedAnswer(cell: string): { status: number; reason?: string } {
  const m = /^(\d{3})(?:\s+`([A-Z_]+)`)?/.exec(cell.trim());
  if (!m) throw new Error(`docs/partners.md: "${cell}" is not "<status> \`REASON\`"`);
  return { status: Number(m[1]), ...(m[2] ? { reason: m[2] } : {}) };
}

function statedDifferences(): Map<string, StatedDifference> {
  const section = PARTNERS.split(/^### What the mock cannot reproduce$/m)[1]?.split(/^#{2,3} /m)[0];
  if (!section) throw new Error('docs/partners.md has no "### What the mock cannot reproduce" section');
  const rows = new Map<string, StatedDifference>();
  for (const line of section.split("\n")) {
    const cells = line.split("|").slice(1, -1);
    const name = /^\s*`([^`]+)`\s*$/.exec(cells[0] ?? "")?.[1];
    if (!name || cells.length < 4) continue;
    rows.set(name, { mock: statedAnswer(cells[1]!), server: statedAnswer(cells[2]!) });
  }
  return rows;
}

let mock: Served;
let ts: TestServer;
let hook: Hooked;
let senders: Record<SenderKind, SenderListener>;
let adminToken: string;
let userToken: string;

const now = () => String(Math.floor(Date.now() / 1000));
const uuid = () => crypto.randomUUID();

async function accessToken(baseUrl: string, clientId: string, clientSecret: string): Promise<string> {
  const form = new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret });
  const answer = await rawRequest(baseUrl, "POST", "/auth/v1/token", { "Content-Type": "application/x-www-form-urlencoded" }, Buffer.from(form.toString()));
  return (JSON.parse(answer.text) as { access_token: string }).access_token;
}

const admin = () => ({ Authorization: `Bearer ${adminToken}` });
const json = (value: unknown) => ({ headers: { ...admin(), "Content-Type": "application/json" }, body: JSON.stringify(value) });
const user = (over: Record<string, unknown> = {}) => ({ displayName: "Ada Lovelace", email: "ada@example.com", roles: ["ROLE_USER"], ...over });
const money = (over: Record<string, unknown> = {}) => ({ limit: { amount: { money: { currencyCode: "USD", units: "40", nanos: 0, ...over } } } });
const form = (fields: Record<string, string>) => ({
  headers: { "Content-Type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});
const token = { grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret };

/** The headers a case sends: those set to undefined are left out. */
const present = (headers: Record<string, string | undefined>): Record<string, string> => Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => e[1] !== undefined));

/** A webhook request to the server's HMAC listener, signed with its secret unless told otherwise. */
function webhook(over: { body?: string; headers?: Record<string, string | undefined>; eventId?: string; timestamp?: string; secret?: string } = {}): Case {
  const body = over.body ?? '{"event":"card.lost"}';
  const eventId = over.eventId ?? uuid();
  const timestamp = over.timestamp ?? now();
  const headers: Record<string, string | undefined> = {
    "Content-Type": "application/json",
    "Webhook-Timestamp": timestamp,
    "Webhook-Event-Id": eventId,
    "Webhook-Signature": hmacSignature(over.secret ?? hook.secret, timestamp, eventId, body),
    ...over.headers,
  };
  return { method: "POST", target: "{listener}", headers: present(headers), body };
}

/** A delivery to the server's listener of `kind`, signed by its sender's library with the listener's secret. */
async function delivery(kind: SenderKind, over: { body?: string; headers?: Record<string, string | undefined>; id?: string; timestamp?: string } = {}): Promise<Case> {
  const id = over.id ?? `evt_${uuid().replaceAll("-", "")}`;
  const body = over.body ?? senderBody(kind, id);
  const signed = await senderHeaders(kind, senders[kind].secret, body, { id, timestamp: over.timestamp ?? now() });
  return { method: "POST", target: `{${kind}}`, headers: present({ ...signed, ...over.headers }), body };
}

const stale = () => String(Number(now()) - 3600);

const limitPath = "/api/v1/funds/my/app-limits/app-github/limit";

/**
 * Every case, by the name the documented table uses. Requests are built when the case runs, once the
 * server is up (tokens, the listener, the current time).
 */
const CASES: Record<string, () => Case | Promise<Case>> = {
  "page_size not an integer": () => ({ method: "GET", target: "/api/v1/users?page_size=ten", headers: admin() }),
  "page_size in exponent notation": () => ({ method: "GET", target: "/api/v1/users?page_size=1e2", headers: admin() }),
  "page_size in hexadecimal": () => ({ method: "GET", target: "/api/v1/funds/app-caps?page_size=0x10", headers: admin() }),
  "page_token given twice": () => ({ method: "GET", target: "/api/v1/users?page_token=a&page_token=b", headers: admin() }),
  "query value not percent-encoded UTF-8": () => ({ method: "GET", target: "/api/v1/funds/spend-authorizations?app_id=%c0%af", headers: admin() }),
  "query value holding a character RFC 3986 does not allow": () => ({ method: "GET", target: "/api/v1/users?page_token=a[0]", headers: admin() }),
  "required body empty": () => ({ method: "POST", target: "/api/v1/funds/spend-authorizations/Sa4kP9mW2xQ7rT5n/capture", headers: { ...admin(), "Content-Type": "application/json" }, body: "" }),
  "JSON body null": () => ({ method: "POST", target: "/api/v1/users", headers: { ...admin(), "Content-Type": "application/json" }, body: "null" }),
  "path parameter not percent-encoded UTF-8": () => ({ method: "GET", target: "/api/v1/users/%c0%af", headers: admin() }),
  "no arm of a SpendLimit": () => ({ method: "POST", target: limitPath, ...json({ limit: {} }) }),
  "page_token not issued by the server": () => ({ method: "GET", target: "/api/v1/users?page_token=bm90LWEtcGFnZS10b2tlbg", headers: admin() }),
  "unknown query parameter": () => ({ method: "GET", target: "/api/v1/users?colour=blue", headers: admin() }),
  "user query over 100 characters": () => ({ method: "GET", target: `/api/v1/users?query=${"a".repeat(101)}`, headers: admin() }),
  "missing required body field": () => ({ method: "POST", target: "/api/v1/users", ...json({ email: "ada@example.com", roles: ["ROLE_USER"] }) }),
  "wrong type in the body": () => ({ method: "POST", target: "/api/v1/users", ...json(user({ displayName: 42 })) }),
  "extra body property": () => ({ method: "POST", target: "/api/v1/users", ...json(user({ nickname: "Ada" })) }),
  "unknown enum value": () => ({ method: "POST", target: "/api/v1/users", ...json(user({ roles: ["ROLE_OWNER"] })) }),
  "malformed email": () => ({ method: "POST", target: "/api/v1/users", ...json(user({ email: "not-an-email" })) }),
  "Money units as a JSON number": () => ({ method: "POST", target: limitPath, ...json(money({ units: 40 })) }),
  "Money nanos out of range": () => ({ method: "POST", target: limitPath, ...json(money({ nanos: 1_000_000_000 })) }),
  "two arms of a SpendLimit": () => ({ method: "POST", target: limitPath, ...json({ limit: { ...money().limit, unlimited: {} } }) }),
  "currency other than the fund's": () => ({ method: "POST", target: limitPath, ...json(money({ currencyCode: "EUR" })) }),
  "period without a limit": () => ({ method: "POST", target: "/api/v1/funds/app-caps/app-github", ...json({ controls: { period: "PERIOD_KIND_MONTHLY" } }) }),
  "blocked extension limit": () => ({
    method: "POST",
    target: "/api/v1/funds/app-caps/app-github",
    ...json({ controls: { extension: { limit: { blocked: {} }, expiresAt: "2099-01-01T00:00:00Z", reason: "travel" } } }),
  }),
  "extension expiring in the past": () => ({
    method: "POST",
    target: "/api/v1/funds/app-caps/app-github",
    ...json({ controls: { limit: { unlimited: {} }, extension: { limit: { unlimited: {} }, expiresAt: "2001-01-01T00:00:00Z", reason: "travel" } } }),
  }),
  "path parameter breaking its pattern": () => ({ method: "GET", target: "/api/v1/users/not!an!id", headers: admin() }),
  "unknown user": () => ({ method: "GET", target: "/api/v1/users/2Qk3mN8rT1vX9yZ0", headers: admin() }),
  "wrong Content-Type": () => ({ method: "POST", target: "/api/v1/users", headers: { ...admin(), "Content-Type": "text/plain" }, body: JSON.stringify(user()) }),
  "body not JSON": () => ({ method: "POST", target: "/api/v1/users", headers: { ...admin(), "Content-Type": "application/json" }, body: '{"displayName": oops' }),
  "body not UTF-8": () => ({ method: "POST", target: "/api/v1/users", headers: { ...admin(), "Content-Type": "application/json" }, body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) }),
  "NUL character in a string": () => ({ method: "POST", target: "/api/v1/users", ...json(user({ displayName: "Ada\u0000" })) }),
  "JSON body over 256 KB": () => ({ method: "POST", target: "/api/v1/users", ...json(user({ displayName: "a".repeat(300_000) })) }),
  "CEL expression that does not compile": () => ({
    method: "POST",
    target: "/api/v1/automations",
    ...json({
      automation: {
        displayName: "Broken",
        isDraft: true,
        triggers: [{ webhook: { hmac: {} } }],
        automationSteps: [{ stepName: "parse", evaluateExpressions: { expressions: [{ name: "x", expression: "ctx.trigger.(" }] } }],
      },
    }),
  }),
  "notify step URL that is not https": () => ({
    method: "POST",
    target: "/api/v1/automations",
    ...json({ automation: { displayName: "Plain", isDraft: true, automationSteps: [{ stepName: "tell", notify: { url: "http://hooks.example.com/x", bodyCel: "{}" } }] } }),
  }),
  "unknown route": () => ({ method: "GET", target: "/api/v1/nothing-here", headers: admin() }),
  "wrong method": () => ({ method: "PUT", target: "/api/v1/users", headers: admin() }),
  "missing bearer token": () => ({ method: "GET", target: "/api/v1/funds/policy" }),
  "bearer token not a JWT": () => ({ method: "GET", target: "/api/v1/funds/policy", headers: { Authorization: "Bearer not-a-jwt" } }),
  "bearer token not issued by the server": () => ({
    method: "GET",
    target: "/api/v1/funds/policy",
    headers: { Authorization: `Bearer ${adminToken.split(".").slice(0, 2).join(".")}.${"A".repeat(86)}` },
  }),
  "role not allowed": () => ({ method: "GET", target: "/api/v1/users", headers: { Authorization: `Bearer ${userToken}` } }),
  "token request with credentials in the query": () => ({ method: "POST", target: "/auth/v1/token?client_id=x", ...form(token) }),
  "token request with another grant type": () => ({ method: "POST", target: "/auth/v1/token", ...form({ ...token, grant_type: "password" }) }),
  "token request missing client_secret": () => ({ method: "POST", target: "/auth/v1/token", ...form({ grant_type: "client_credentials", client_id: "x" }) }),
  "token request with client_id twice": () => ({ method: "POST", target: "/auth/v1/token", headers: form(token).headers, body: `${form(token).body}&client_id=other` }),
  "token request with a wrong secret": () => ({ method: "POST", target: "/auth/v1/token", ...form({ ...token, client_secret: "wrong" }) }),
  "webhook without Content-Type": () => webhook({ headers: { "Content-Type": undefined } }),
  "webhook with a text/plain body": () => webhook({ headers: { "Content-Type": "text/plain" } }),
  "webhook without Webhook-Timestamp": () => webhook({ headers: { "Webhook-Timestamp": undefined } }),
  "webhook timestamp not a number": () => webhook({ timestamp: "yesterday" }),
  "webhook timestamp older than 300 s": () => webhook({ timestamp: String(Number(now()) - 3600) }),
  "webhook event id not a UUID v4": () => webhook({ eventId: "event-1" }),
  "webhook body not JSON": () => webhook({ body: "card.lost" }),
  "webhook without a signature": () => webhook({ headers: { "Webhook-Signature": undefined } }),
  "webhook body over 64 KB": () => webhook({ body: JSON.stringify({ pad: "a".repeat(70_000) }) }),
  "webhook with a wrong signature": () => webhook({ secret: "not-the-secret" }),
  "webhook to an unknown listener": () => ({ ...webhook(), target: "/api/v1/webhooks/incoming/wh_0000000000000000" }),
  "webhook event id sent twice": () => ({ ...webhook(), twice: true }),
  "Standard Webhooks delivery without webhook-id": () => delivery("standardWebhooks", { headers: { "webhook-id": undefined } }),
  "Standard Webhooks delivery without webhook-timestamp": () => delivery("standardWebhooks", { headers: { "webhook-timestamp": undefined } }),
  "Standard Webhooks webhook-id breaking the event id rule": () => delivery("standardWebhooks", { id: "-msg" }),
  "Standard Webhooks webhook-timestamp not a number": () => delivery("standardWebhooks", { headers: { "webhook-timestamp": "yesterday" } }),
  "Standard Webhooks webhook-timestamp older than 300 s": () => delivery("standardWebhooks", { timestamp: stale() }),
  "Standard Webhooks delivery without webhook-signature": () => delivery("standardWebhooks", { headers: { "webhook-signature": undefined } }),
  "GitHub delivery without Content-Type": () => delivery("github", { headers: { "Content-Type": undefined } }),
  "GitHub delivery without X-GitHub-Delivery": () => delivery("github", { headers: { "X-GitHub-Delivery": undefined } }),
  "GitHub delivery without X-GitHub-Event": () => delivery("github", { headers: { "X-GitHub-Event": undefined } }),
  "GitHub X-GitHub-Delivery breaking the event id rule": () => delivery("github", { id: "-72d3162e" }),
  "GitHub X-GitHub-Event not an event name": () => delivery("github", { headers: { "X-GitHub-Event": "Pull Request" } }),
  "GitHub delivery without X-Hub-Signature-256": () => delivery("github", { headers: { "X-Hub-Signature-256": undefined } }),
  "Stripe event without id": () => delivery("stripe", { body: JSON.stringify({ object: "event", type: "invoice.paid" }) }),
  "Stripe event id breaking the event id rule": () => delivery("stripe", { id: "-evt" }),
  "Stripe event body not JSON": () => delivery("stripe", { body: "evt_1" }),
  "Stripe-Signature without t=": () => delivery("stripe", { headers: { "Stripe-Signature": "v1=00" } }),
  "Stripe-Signature t= older than 300 s": () => delivery("stripe", { timestamp: stale() }),
  "Stripe event without Stripe-Signature": () => delivery("stripe", { headers: { "Stripe-Signature": undefined } }),
  "redrive of an unknown execution": () => ({ method: "POST", target: "/api/v1/automation_executions/exe_9Tg3Hs6Wq1Zc4Nv8/redrive", ...json({}) }),
  "redrive with a body field": () => ({ method: "POST", target: "/api/v1/automation_executions/exe_9Tg3Hs6Wq1Zc4Nv8/redrive", ...json({ force: true }) }),
  "bulk redrive of a range that has not ended": () => ({ method: "POST", target: "/api/v1/automations/aut_5Xn2Bq8Rk4Lm7Pz1/executions/redrive", ...json({ since: "2026-01-01T00:00:00Z", until: "2999-01-01T00:00:00Z" }) }),
  "bulk redrive without since": () => ({ method: "POST", target: "/api/v1/automations/aut_5Xn2Bq8Rk4Lm7Pz1/executions/redrive", ...json({ until: "2026-01-01T00:00:00Z" }) }),
  "bulk redrive with a malformed until": () => ({ method: "POST", target: "/api/v1/automations/aut_5Xn2Bq8Rk4Lm7Pz1/executions/redrive", ...json({ since: "2026-01-01T00:00:00Z", until: "tomorrow" }) }),
};

/** The path of a listener the target names, else the target. */
function resolved(target: string): string {
  const named = /^\{(\w+)\}$/.exec(target)?.[1];
  if (named === undefined) return target;
  return new URL(named === "listener" ? hook.url : senders[named as SenderKind].url).pathname;
}

async function send(baseUrl: string, c: Case, requestId: string): Promise<RawAnswer> {
  const target = resolved(c.target);
  const body = typeof c.body === "string" ? Buffer.from(c.body, "utf8") : c.body;
  const headers = { ...c.headers, "X-Request-Id": requestId };
  if (c.twice) await rawRequest(baseUrl, c.method, target, headers, body);
  return rawRequest(baseUrl, c.method, target, headers, body);
}

interface Seen {
  status: number;
  requestId: string | undefined;
  reason: string | undefined;
  body: unknown;
}

function seen(answer: RawAnswer): Seen {
  let body: unknown = answer.text;
  try {
    body = JSON.parse(answer.text);
  } catch {
    // not JSON: compared as text
  }
  const details = (body as { details?: { "@type": string; reason?: string }[] })?.details ?? [];
  const reason = details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo")?.reason;
  return { status: answer.status, requestId: answer.headers["x-request-id"] as string | undefined, reason, body };
}

beforeAll(async () => {
  [mock, ts] = await Promise.all([startMock(), startTestServer()]);
  // Webhook timestamps are checked against each side's clock: the server's must read the real time.
  ts.clock.set(Date.now());
  hook = await createHooked(ts);
  senders = await senderListeners(ts);
  const plain = await ts.userClient(["ROLE_USER"]);
  [adminToken, userToken] = await Promise.all([
    accessToken(ts.url, BOOTSTRAP.clientId, BOOTSTRAP.clientSecret),
    accessToken(ts.url, plain.clientId, plain.clientSecret),
  ]);
}, 90_000);
afterAll(async () => Promise.all([mock?.stop(), ts?.stop()]));

describe("the mock and the server answer the same invalid requests alike", () => {
  it("covers at least 28 invalid requests, and the documentation names only cases that exist", () => {
    const names = Object.keys(CASES);
    expect(names.length).toBeGreaterThanOrEqual(28);
    expect([...statedDifferences().keys()].filter((n) => !names.includes(n))).toEqual([]);
  });

  it.each(Object.keys(CASES))("%s", async (name) => {
    const c = await CASES[name]!();
    const requestId = `cmp-${name.replace(/[^A-Za-z0-9]+/g, "-")}`;
    const [fromMock, fromServer] = (await Promise.all([send(mock.url, c, requestId), send(ts.url, c, requestId)])).map(seen) as [Seen, Seen];
    const stated = statedDifferences().get(name);
    const summary = `mock ${fromMock.status} ${fromMock.reason} ${JSON.stringify(fromMock.body).slice(0, 300)}\nserver ${fromServer.status} ${fromServer.reason} ${JSON.stringify(fromServer.body).slice(0, 300)}`;
    if (stated) {
      expect({ status: fromMock.status, reason: fromMock.reason }, summary).toEqual({ reason: undefined, ...stated.mock });
      expect({ status: fromServer.status, reason: fromServer.reason }, summary).toEqual({ reason: undefined, ...stated.server });
    } else {
      expect(fromServer.status, summary).toBeGreaterThanOrEqual(400);
      expect(fromMock, summary).toEqual(fromServer);
    }
  });
});

describe("a well-formed delivery of each sender kind", () => {
  it.each(SENDER_KINDS)("%s: the server records it; the mock answers the operation's example", async (kind) => {
    const c = await delivery(kind);
    const [fromMock, fromServer] = (await Promise.all([send(mock.url, c, "cmp-accepted"), send(ts.url, c, "cmp-accepted")])).map(seen) as [Seen, Seen];
    expect(fromServer.status, JSON.stringify(fromServer.body)).toBe(200);
    expect({ status: fromMock.status, body: fromMock.body }).toEqual({ status: 200, body: example200(SENDER_OPERATIONS[kind]) });
  });
});
