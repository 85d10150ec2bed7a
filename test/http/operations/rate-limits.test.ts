// The rate limits over real HTTP, with low quotas and the test's clock: a credential over its
// limit is refused (429, Retry-After, the RateLimit fields) while another credential is served in
// the same moment; a source address likewise, X-Forwarded-For believed only from a trusted proxy;
// a listener's limit counts only the deliveries that authenticated, so that forged ones cannot
// starve its sender, and an address whose deliveries fail authentication is refused, before any
// work, once it has spent its own failure budget. How much load a credential over its limit puts on
// the others' latency is measured by `npm run bench` (scenario 8), not asserted here.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { rawRequest } from "../../support/raw-http.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";
import { amount, newAppId } from "../limits/helpers.js";
import {
  createHooked,
  eventsOf,
  expectAccepted,
  expectRefused,
  JwksHost,
  newEventId,
  postRaw,
  sendHmac,
  signClaims,
  signingKey,
  unixTime,
  webhookClaims,
  type Answer as WebhookAnswer,
  type Hooked,
  type SigningKey,
} from "../webhooks/helpers.js";

const POLICY = "/api/v1/funds/policy";
const REFUSED = {
  source: "too many requests from this source address; retry after the seconds in Retry-After",
  credential: "too many requests with this credential; retry after the seconds in Retry-After",
  listener: "too many deliveries to this listener; retry after the seconds in Retry-After",
  "listener-failures": "too many failed authentications from this source address to this listener; retry after the seconds in Retry-After",
};

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** One request over a fresh connection from `from` (an address of 127.0.0.0/8). */
async function call(ts: TestServer, method: string, path: string, headers: Record<string, string> = {}, body?: string, from = "127.0.0.1"): Promise<Answer> {
  const answer = await rawRequest(ts.url, method, path, headers, body === undefined ? undefined : Buffer.from(body), from);
  return { status: answer.status, headers: answer.headers, body: answer.text ? JSON.parse(answer.text) : undefined };
}

async function token(ts: TestServer, credentials: { clientId: string; clientSecret: string }, from = "127.0.0.1"): Promise<Answer> {
  const form = new URLSearchParams({ grant_type: "client_credentials", client_id: credentials.clientId, client_secret: credentials.clientSecret }).toString();
  return call(ts, "POST", "/auth/v1/token", { "Content-Type": "application/x-www-form-urlencoded" }, form, from);
}

const bearer = async (ts: TestServer, roles: ("ROLE_USER" | "ROLE_FUND_ADMIN")[] = ["ROLE_USER"]) => {
  const answer = await token(ts, await ts.userClient(roles));
  expect(answer.status).toBe(200);
  return { Authorization: `Bearer ${answer.body.access_token as string}` };
};

function expectRateLimited(answer: Pick<Answer, "status" | "headers" | "body">, policy: keyof typeof REFUSED, retryAfter: number): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(429);
  expect(answer.headers["retry-after"]).toBe(String(retryAfter));
  expect(answer.headers.ratelimit).toContain(`"${policy}";r=0;t=${retryAfter}`);
  expect(answer.body.message).toBe(REFUSED[policy]);
  const reason = policy === "listener-failures" ? "TOO_MANY_FAILED_ATTEMPTS" : "RATE_LIMITED";
  expect(answer.body.details[0]).toMatchObject({ reason, metadata: { policy } });
}

describe("per credential (5 requests per 10 s)", () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ RATE_LIMIT_CREDENTIAL: "5/10", RATE_LIMIT_SOURCE: "1000/10" });
  });
  afterAll(async () => ts?.stop());
  // A window later every bucket is full again: the admin's setup calls (at most 5) have room.
  beforeEach(() => ts.clock.advance(10_000));

  it("a credential over its limit gets 429 with Retry-After and the RateLimit fields, while another credential's requests in the same moment all succeed", async () => {
    const [a, b] = [await bearer(ts), await bearer(ts)];
    // Sent together, interleaved: A twelve times, B five times (its whole quota).
    const sentA: Promise<Answer>[] = [];
    const sentB: Promise<Answer>[] = [];
    for (let i = 0; i < 12; i++) {
      sentA.push(call(ts, "GET", POLICY, a));
      if (i < 5) sentB.push(call(ts, "GET", POLICY, b));
    }
    const [fromA, fromB] = await Promise.all([Promise.all(sentA), Promise.all(sentB)]);
    expect(fromB.map((x) => x.status)).toEqual([200, 200, 200, 200, 200]);
    expect(fromA.map((x) => x.status).sort()).toEqual([...Array(5).fill(200), ...Array(7).fill(429)]);
    const refused = fromA.find((x) => x.status === 429)!;
    // 5 per 10 s: one request every 2 s.
    expectRateLimited(refused, "credential", 2);
    expect(refused.headers["ratelimit-policy"]).toBe('"source";q=1000;w=10, "credential";q=5;w=10');
  });

  it("an admitted answer tells what is left and when it is all restored; Retry-After later, one more is admitted", async () => {
    const c = await bearer(ts);
    const first = await call(ts, "GET", POLICY, c);
    expect(first.status).toBe(200);
    expect(first.headers["ratelimit-policy"]).toBe('"source";q=1000;w=10, "credential";q=5;w=10');
    expect(first.headers.ratelimit).toMatch(/^"source";r=\d+;t=\d+, "credential";r=4;t=2$/);
    expect((await call(ts, "GET", POLICY, c)).headers.ratelimit).toMatch(/"credential";r=3;t=4$/);
    for (let i = 0; i < 3; i++) expect((await call(ts, "GET", POLICY, c)).status).toBe(200);
    expectRateLimited(await call(ts, "GET", POLICY, c), "credential", 2);
    ts.clock.advance(1999);
    expectRateLimited(await call(ts, "GET", POLICY, c), "credential", 1);
    ts.clock.advance(1);
    const again = await call(ts, "GET", POLICY, c);
    expect(again.status).toBe(200);
    expect(again.headers.ratelimit).toMatch(/"credential";r=0;t=10$/);
    expectRateLimited(await call(ts, "GET", POLICY, c), "credential", 2);
  });

  it("a request over the limit does nothing: a write refused 429 is not made", async () => {
    const c = await bearer(ts);
    for (let i = 0; i < 5; i++) expect((await call(ts, "GET", POLICY, c)).status).toBe(200);
    const app = newAppId("rate");
    const write = await call(ts, "POST", `/api/v1/funds/my/app-limits/${app}/limit`, { ...c, "Content-Type": "application/json" }, JSON.stringify({ limit: amount("10") }));
    expectRateLimited(write, "credential", 2);
    ts.clock.advance(2000);
    expect((await call(ts, "GET", `/api/v1/funds/my/app-limits/${app}`, c)).status).toBe(404);
  });
});

describe("per source address (3 requests per 10 s; 127.0.0.2 is a trusted proxy)", () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ RATE_LIMIT_SOURCE: "3/10", TRUST_PROXY: "127.0.0.2/32" });
  });
  afterAll(async () => ts?.stop());

  it("an address over its limit gets 429 on every operation, the token endpoint included, while another address is served", async () => {
    for (let i = 0; i < 3; i++) expect((await call(ts, "GET", POLICY, {}, undefined, "127.0.0.3")).status).toBe(401);
    const refused = await call(ts, "GET", POLICY, {}, undefined, "127.0.0.3");
    expectRateLimited(refused, "source", 4);
    expect(refused.headers["ratelimit-policy"]).toBe('"source";q=3;w=10');
    expectRateLimited(await token(ts, BOOTSTRAP, "127.0.0.3"), "source", 4);
    expect((await call(ts, "GET", POLICY, {}, undefined, "127.0.0.4")).status).toBe(401);
    expect((await token(ts, BOOTSTRAP, "127.0.0.4")).status).toBe(200);
  });

  it("a refusal other than 429 carries the RateLimit fields too, as the contract declares on every 4xx answer", async () => {
    const refusals = [
      await call(ts, "GET", POLICY, {}, undefined, "127.0.0.6"),
      await call(ts, "POST", "/auth/v1/token", { "Content-Type": "application/x-www-form-urlencoded" }, "grant_type=password", "127.0.0.6"),
      await call(ts, "POST", "/auth/v1/token", { "Content-Type": "text/plain" }, "grant_type=client_credentials", "127.0.0.6"),
    ];
    expect(refusals.map((a) => a.status)).toEqual([401, 400, 415]);
    for (const [i, answer] of refusals.entries()) {
      expect(answer.headers["ratelimit-policy"]).toBe('"source";q=3;w=10');
      expect(answer.headers.ratelimit).toMatch(new RegExp(`^"source";r=${2 - i};t=\\d+$`));
    }
  });

  it("X-Forwarded-For is believed only from a trusted proxy: a client cannot leave its limit behind with it", async () => {
    for (let i = 0; i < 4; i++) await call(ts, "GET", POLICY, {}, undefined, "127.0.0.5");
    expectRateLimited(await call(ts, "GET", POLICY, { "X-Forwarded-For": "198.51.100.7" }, undefined, "127.0.0.5"), "source", 4);
    // Through the trusted proxy, each forwarded client has a limit of its own.
    const viaProxy = (client: string) => call(ts, "GET", POLICY, { "X-Forwarded-For": client }, undefined, "127.0.0.2");
    for (let i = 0; i < 3; i++) expect((await viaProxy("198.51.100.7")).status).toBe(401);
    expectRateLimited(await viaProxy("198.51.100.7"), "source", 4);
    expect((await viaProxy("198.51.100.8")).status).toBe(401);
  });
});

describe("per listener (3 deliveries per 10 s), and per listener and address for failed authentications (2 per 10 s)", () => {
  let ts: TestServer;
  let jwks: JwksHost;
  beforeAll(async () => {
    ts = await startTestServer({ RATE_LIMIT_SOURCE: "1000/10", RATE_LIMIT_LISTENER: "3/10", RATE_LIMIT_LISTENER_FAILURES: "2/10", TRUST_PROXY: "127.0.0.1/32" });
    jwks = await JwksHost.start();
  });
  afterAll(async () => Promise.all([ts?.stop(), jwks?.close()]));
  beforeEach(() => ts.clock.advance(10_000));

  // Each sender is a client address of its own, forwarded by the trusted proxy (the test).
  const SENDER = "198.51.100.10";
  const ATTACKER = "203.0.113.66";
  const from = (address: string) => ({ "X-Forwarded-For": address });
  const signed = (hook: Hooked, address: string, body?: string, eventId?: string) =>
    sendHmac(ts, hook.url, hook.secret, body, { headers: from(address), ...(eventId ? { eventId } : {}) });
  const forged = (hook: Hooked, address: string) => sendHmac(ts, hook.url, "not-the-listener-secret", undefined, { headers: from(address) });
  const unsigned = (hook: Hooked, address: string) => sendHmac(ts, hook.url, hook.secret, undefined, { headers: { ...from(address), "Webhook-Signature": undefined } });

  it("unsigned and forged deliveries, from one address and from many, far beyond the listener's quota, leave its sender the whole of it", async () => {
    const hook = await createHooked(ts);
    // Sent together, interleaved: one address six times, five others twice each, the sender three times.
    const forgeries: Promise<WebhookAnswer>[] = [];
    const deliveries: Promise<WebhookAnswer>[] = [];
    for (let i = 0; i < 6; i++) {
      forgeries.push(i % 2 === 0 ? unsigned(hook, ATTACKER) : forged(hook, ATTACKER));
      if (i < 5) forgeries.push(forged(hook, `203.0.113.${10 + i}`), unsigned(hook, `203.0.113.${10 + i}`));
      if (i < 3) deliveries.push(signed(hook, SENDER, `{"n":${i}}`));
    }
    const [refused, accepted] = await Promise.all([Promise.all(forgeries), Promise.all(deliveries)]);
    for (const answer of accepted) expectAccepted(answer);
    expect(refused).toHaveLength(16);
    for (const answer of refused) expect([401, 429]).toContain(answer.status);
    expect(await eventsOf(ts.admin, hook.id)).toHaveLength(3);
    // The forgeries took none of the listener's quota: the sender's fourth delivery is the one refused.
    expectRateLimited(await signed(hook, SENDER), "listener", 4);
  });

  it("an address whose deliveries fail authentication is refused once it has spent its failure budget, before any work, and the refusal says so", async () => {
    const hook = await createHooked(ts);
    // A request refused before authentication (400) is not a failed authentication: it counts against neither.
    const malformed = await signed(hook, ATTACKER, "not json");
    expectRefused(malformed, 400, "MALFORMED_BODY");
    expect(malformed.headers["ratelimit-policy"]).toBe('"source";q=1000;w=10');
    const first = await unsigned(hook, ATTACKER);
    expectRefused(first, 401, "MISSING_SIGNATURE");
    expect(first.headers["ratelimit-policy"]).toBe('"source";q=1000;w=10, "listener-failures";q=2;w=10');
    expect(first.headers.ratelimit).toMatch(/^"source";r=\d+;t=\d+, "listener-failures";r=1;t=5$/);
    const second = await forged(hook, ATTACKER);
    expectRefused(second, 401, "INVALID_SIGNATURE");
    expect(second.headers.ratelimit).toMatch(/, "listener-failures";r=0;t=10$/);
    // 2 per 10 s: one every 5 s.
    const third = await forged(hook, ATTACKER);
    expectRateLimited(third, "listener-failures", 5);
    expect(third.headers["ratelimit-policy"]).toBe('"source";q=1000;w=10, "listener-failures";q=2;w=10');
    // Before any work: even a delivery it signs is refused and not recorded, and a body over 64 KB
    // is not read (429, not 413), so nothing is verified for it.
    const eventId = newEventId();
    expectRateLimited(await signed(hook, ATTACKER, '{"n":1}', eventId), "listener-failures", 5);
    expectRateLimited(await signed(hook, ATTACKER, JSON.stringify({ pad: "x".repeat(70_000) })), "listener-failures", 5);
    expect(await eventsOf(ts.admin, hook.id)).toHaveLength(0);
    // That address on that listener only: another address still gets its 401, the sender its 200,
    // and the address itself is served by another listener.
    expectRefused(await forged(hook, "203.0.113.67"), 401, "INVALID_SIGNATURE");
    expectAccepted(await signed(hook, SENDER));
    expectAccepted(await signed(await createHooked(ts), ATTACKER));
    // Retry-After later it is heard again, and the event id refused was not consumed.
    ts.clock.advance(5000);
    expectAccepted(await signed(hook, ATTACKER, '{"n":1}', eventId));
  });

  it("a sender whose deliveries authenticate is still held to the listener's limit, which forged deliveries neither count against nor are refused by", async () => {
    const hook = await createHooked(ts);
    for (let i = 0; i < 3; i++) expectAccepted(await signed(hook, SENDER));
    const refusedId = newEventId();
    const over = await signed(hook, SENDER, '{"n":4}', refusedId);
    // 3 per 10 s: one every 3.34 s.
    expectRateLimited(over, "listener", 4);
    expect(over.headers["ratelimit-policy"]).toBe('"source";q=1000;w=10, "listener";q=3;w=10');
    expectRefused(await unsigned(hook, ATTACKER), 401, "MISSING_SIGNATURE");
    expect(await eventsOf(ts.admin, hook.id)).toHaveLength(3);
    // Another listener is served meanwhile.
    expectAccepted(await signed(await createHooked(ts), SENDER));
    // The refused event id was not consumed: once the listener has room, it is accepted.
    ts.clock.advance(4000);
    expectAccepted(await signed(hook, SENDER, '{"n":4}', refusedId));
  });

  it("a JWT listener alike: tokens that do not verify count against their address, never against the listener", async () => {
    const key = await signingKey("ES256", "k1");
    // Names the listener's key but is not it.
    const impostor = await signingKey("ES256", "k1");
    const hook = await createHooked(ts, { jwksUrl: jwks.serve(`/jwks-${Date.now()}.json`, [key.publicJwk]) });
    const send = async (signer: SigningKey, address: string) => {
      const eventId = newEventId();
      const token = await signClaims(signer, webhookClaims(ts, hook.url, eventId, "{}"));
      const headers = { "Content-Type": "application/json", "Webhook-Timestamp": unixTime(ts), "Webhook-Event-Id": eventId, Authorization: `Bearer ${token}`, ...from(address) };
      return postRaw(hook.url, { headers, body: "{}" });
    };
    for (let i = 0; i < 2; i++) expectRefused(await send(impostor, ATTACKER), 401, "INVALID_JWT");
    expectRateLimited(await send(impostor, ATTACKER), "listener-failures", 5);
    for (let i = 0; i < 3; i++) expectAccepted(await send(key, SENDER));
    expectRateLimited(await send(key, SENDER), "listener", 4);
  });
});

describe("RATE_LIMIT=off", () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ RATE_LIMIT: "off", RATE_LIMIT_SOURCE: "1/60" });
  });
  afterAll(async () => ts?.stop());

  it("limits nothing and sends no RateLimit fields", async () => {
    const answers = await Promise.all(Array.from({ length: 5 }, () => call(ts, "GET", POLICY)));
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401, 401]);
    expect(answers.map((a) => [a.headers.ratelimit, a.headers["ratelimit-policy"]]).flat().filter(Boolean)).toEqual([]);
  });
});
