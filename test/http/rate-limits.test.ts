// The rate limits over real HTTP, with low quotas and the test's clock: a credential over its
// limit is refused (429, Retry-After, the RateLimit fields) while another credential is served in
// the same moment; a source address likewise, X-Forwarded-For believed only from a trusted proxy;
// a listener's deliveries over its limit are refused before any work (nothing recorded, the body
// not read, not even the listener looked up). How much load a credential over its limit puts on the
// others' latency is measured by `npm run bench` (scenario 8), not asserted here.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { rawRequest } from "../support/raw-http.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../support/server.js";
import { amount, newAppId } from "./funds-helpers.js";
import { createHooked, eventsOf, expectAccepted, expectRefused, newEventId, sendHmac } from "./webhooks-helpers.js";

const POLICY = "/api/v1/funds/policy";
const REFUSED = {
  source: "too many requests from this source address; retry after the seconds in Retry-After",
  credential: "too many requests with this credential; retry after the seconds in Retry-After",
  listener: "too many deliveries to this listener; retry after the seconds in Retry-After",
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

function expectRateLimited(answer: Answer, policy: keyof typeof REFUSED, retryAfter: number): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(429);
  expect(answer.headers["retry-after"]).toBe(String(retryAfter));
  expect(answer.headers.ratelimit).toContain(`"${policy}";r=0;t=${retryAfter}`);
  expect(answer.body.message).toBe(REFUSED[policy]);
  expect(answer.body.details[0]).toMatchObject({ reason: "RATE_LIMITED", metadata: { policy } });
}

describe("per credential (5 requests per 10 s)", () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ RATE_LIMIT_CREDENTIAL: "5/10", RATE_LIMIT_SOURCE: "1000/10", RATE_LIMIT_LISTENER: "3/10" });
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

  it("a listener's deliveries over its limit are 429 before any work: not recorded, the body not read, the listener not even looked up", async () => {
    const hook = await createHooked(ts);
    for (let i = 0; i < 3; i++) expectAccepted(await sendHmac(ts, hook.url, hook.secret));
    const refusedId = newEventId();
    const over = await sendHmac(ts, hook.url, hook.secret, '{"n":4}', { eventId: refusedId });
    expectRefused(over, 429, "RATE_LIMITED");
    // 3 per 10 s: one every 3.34 s.
    expect(over.headers["retry-after"]).toBe("4");
    expect(over.body.message).toBe(REFUSED.listener);
    expect(over.headers["ratelimit-policy"]).toBe('"source";q=1000;w=10, "listener";q=3;w=10');
    // A body over the intake's 64 KB is not read: 429, not 413.
    expectRefused(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ pad: "x".repeat(70_000) })), 429, "RATE_LIMITED");
    expect(await eventsOf(ts.admin, hook.id)).toHaveLength(3);
    // Another listener is served meanwhile.
    const other = await createHooked(ts);
    expectAccepted(await sendHmac(ts, other.url, other.secret));
    // A listener that does not exist is limited alike: its id is not looked up once over the limit.
    const unknown = hook.url.replace(hook.listenerId, "wh_0000000000000000");
    for (let i = 0; i < 3; i++) expectRefused(await sendHmac(ts, unknown, hook.secret), 404, "LISTENER_NOT_FOUND");
    expectRefused(await sendHmac(ts, unknown, hook.secret), 429, "RATE_LIMITED");
    // The refused event id was not consumed: once the listener has room, it is accepted.
    ts.clock.advance(4000);
    expectAccepted(await sendHmac(ts, hook.url, hook.secret, '{"n":4}', { eventId: refusedId }));
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
