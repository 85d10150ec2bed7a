// The client's retries against a scripted fetch, on a clock the test moves: what is retried (a
// connection error, 408, 429, 503; a POST only with an Idempotency-Key), how long it waits (the
// server's Retry-After or RateLimit wait, else backoff with full jitter) and where it stops (the
// attempts and the time allowed). The retries against a real server: retry-sandbox.test.ts.
import { describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client/index.js";
import type { RetryOptions } from "../../src/client/retry-policy.js";
import { retryingFetch } from "../../src/client/retrying-fetch.js";

type Step = Response | Error;

/** A fetch that answers the steps in order (the last one again once they run out), and what it was sent. */
function scripted(...steps: Step[]) {
  const sent: { method: string; url: string; body: string; key: string | null }[] = [];
  const fetch = async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    sent.push({ method: request.method, url: request.url, body: await request.text(), key: request.headers.get("Idempotency-Key") });
    const step = steps[Math.min(sent.length, steps.length) - 1]!;
    if (step instanceof Error) throw step;
    return step.clone();
  };
  return { fetch, sent };
}

/** A clock that only the waits move, and the waits asked for. */
function clock(options: RetryOptions = {}) {
  let now = Date.parse("2026-11-29T06:00:00Z");
  const waits: number[] = [];
  const retry: RetryOptions = {
    random: () => 0.5,
    now: () => now,
    sleep: async (ms) => {
      waits.push(ms);
      now += ms;
    },
    ...options,
  };
  return { retry, waits };
}

const answer = (status: number, headers: Record<string, string> = {}) => new Response(status === 200 ? "{}" : null, { status, headers });
const reset = () => new TypeError("fetch failed", { cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }) });
const URL_ = "http://api.test/api/v1/funds/spend-authorizations";
const post = (headers: Record<string, string> = {}) => ({ method: "POST", body: '{"amount":1}', headers: { "Content-Type": "application/json", ...headers } });

describe("retryingFetch", () => {
  it("retries a GET after a connection error and a 503, and answers the 200", async () => {
    const { fetch, sent } = scripted(reset(), answer(503), answer(200));
    const { retry, waits } = clock();
    const response = await retryingFetch(fetch, retry)(URL_);
    expect(response.status).toBe(200);
    expect(sent).toHaveLength(3);
    // Full jitter at 0.5: half of 250, then half of 500.
    expect(waits).toEqual([125, 250]);
  });

  it("never retries a POST without an Idempotency-Key, whatever the answer", async () => {
    for (const step of [answer(503), answer(429, { "Retry-After": "1" }), answer(408)]) {
      const { fetch, sent } = scripted(step, answer(200));
      const { retry, waits } = clock();
      expect((await retryingFetch(fetch, retry)(URL_, post())).status).toBe(step.status);
      expect(sent).toHaveLength(1);
      expect(waits).toEqual([]);
    }
    const { fetch, sent } = scripted(reset(), answer(200));
    await expect(retryingFetch(fetch, clock().retry)(URL_, post())).rejects.toThrow("fetch failed");
    expect(sent).toHaveLength(1);
    const patched = scripted(answer(503), answer(200));
    expect((await retryingFetch(patched.fetch, clock().retry)(URL_, { ...post(), method: "PATCH" })).status).toBe(503);
  });

  it("retries a POST with an Idempotency-Key, sending the same body and key each time", async () => {
    const { fetch, sent } = scripted(reset(), answer(503), answer(200));
    const response = await retryingFetch(fetch, clock().retry)(URL_, post({ "Idempotency-Key": "k-1" }));
    expect(response.status).toBe(200);
    expect(sent).toEqual(Array.from({ length: 3 }, () => ({ method: "POST", url: URL_, body: '{"amount":1}', key: "k-1" })));
  });

  it("waits what 429's Retry-After asks, in seconds or as an HTTP-date, and RateLimit's exhausted quota", async () => {
    const { retry, waits } = clock();
    const later = new Date(retry.now!() + 7_000).toUTCString();
    const { fetch } = scripted(
      answer(429, { "Retry-After": "2" }),
      answer(429, { "Retry-After": later }),
      answer(429, { RateLimit: '"source";r=4;t=1, "credential";r=0;t=3' }),
      answer(200),
    );
    expect((await retryingFetch(fetch, { ...retry, maxAttempts: 4 })(URL_)).status).toBe(200);
    // The date is 7 s after the clock's start, and 2 s have passed when it is read.
    expect(waits).toEqual([2_000, 5_000, 3_000]);
  });

  it("takes the server's wait over the backoff's ceiling, the longest of Retry-After and RateLimit", async () => {
    const { fetch } = scripted(answer(503, { "Retry-After": "1", RateLimit: '"credential";r=0;t=12' }), answer(200));
    const { retry, waits } = clock({ maxDelayMs: 100 });
    expect((await retryingFetch(fetch, retry)(URL_)).status).toBe(200);
    expect(waits).toEqual([12_000]);
  });

  it("stops at maxAttempts, answering the last answer or throwing the last error", async () => {
    const unavailable = scripted(answer(503));
    expect((await retryingFetch(unavailable.fetch, clock({ maxAttempts: 4 }).retry)(URL_)).status).toBe(503);
    expect(unavailable.sent).toHaveLength(4);
    const down = scripted(reset());
    const { retry, waits } = clock({ maxAttempts: 5, random: () => 1 });
    await expect(retryingFetch(down.fetch, retry)(URL_)).rejects.toThrow("fetch failed");
    expect(down.sent).toHaveLength(5);
    // The ceiling doubles from 250.
    expect(waits).toEqual([250, 500, 1_000, 2_000]);
  });

  it("waits no longer than maxElapsedMs allows: a wait that would end past it is not waited", async () => {
    const { fetch, sent } = scripted(answer(503, { "Retry-After": "60" }), answer(200));
    const { retry, waits } = clock({ maxElapsedMs: 10_000 });
    expect((await retryingFetch(fetch, retry)(URL_)).status).toBe(503);
    expect(sent).toHaveLength(1);
    expect(waits).toEqual([]);
    const slow = scripted(answer(429, { "Retry-After": "4" }));
    const bounded = clock({ maxAttempts: 10, maxElapsedMs: 10_000 });
    await retryingFetch(slow.fetch, bounded.retry)(URL_);
    expect(bounded.waits).toEqual([4_000, 4_000]);
    expect(slow.sent).toHaveLength(3);
  });

  it("answers any other status at once, and lets an abort through unretried", async () => {
    for (const status of [200, 400, 401, 404, 409, 500, 502]) {
      const { fetch, sent } = scripted(answer(status), answer(200));
      expect((await retryingFetch(fetch, clock().retry)(URL_)).status).toBe(status);
      expect(sent).toHaveLength(1);
    }
    const aborted = scripted(new DOMException("aborted", "AbortError"), answer(200));
    await expect(retryingFetch(aborted.fetch, clock().retry)(URL_)).rejects.toThrow("aborted");
    expect(aborted.sent).toHaveLength(1);
  });
  it("stops waiting, and tries no more, once the call is aborted", async () => {
    const { fetch, sent } = scripted(answer(503, { "Retry-After": "20" }), answer(200));
    const aborting = new AbortController();
    const waiting = retryingFetch(fetch, {})(URL_, { signal: aborting.signal });
    setTimeout(() => aborting.abort(new Error("the caller gave up")), 50);
    const started = Date.now();
    await expect(waiting).rejects.toThrow("the caller gave up");
    // Well before the 20 s the server asked for.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(sent).toHaveLength(1);
  });
});

describe("createApiClient({ retry })", () => {
  const body = { userId: "u", appId: "app-salesforce", amount: { currencyCode: "USD", units: "1", nanos: 0 } };

  it("generates one Idempotency-Key per call of an operation that takes one, when asked to, and retries it", async () => {
    const { fetch, sent } = scripted(answer(503), answer(200));
    const api = createApiClient({ baseUrl: "http://api.test", fetch, retry: { ...clock().retry, generateIdempotencyKeys: true } });
    const create = () => api.POST("/api/v1/users", { body: { displayName: "d", email: "e@example.com", roles: ["ROLE_USER"] } });
    await create();
    expect(sent).toHaveLength(2);
    expect(sent[0]!.key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(sent[1]!.key).toBe(sent[0]!.key);
    await create();
    expect(sent[2]!.key).not.toBe(sent[0]!.key);
  });

  it("keeps a key the call sends, and adds none to an operation that takes none or when not asked to", async () => {
    const { fetch, sent } = scripted(answer(200));
    const generating = createApiClient({ baseUrl: "http://api.test", fetch, retry: { generateIdempotencyKeys: true } });
    await generating.POST("/api/v1/funds/spend-authorizations", { params: { header: { "Idempotency-Key": "mine" } }, body });
    await generating.POST("/api/v1/funds/policy", { body: {} as never });
    await generating.GET("/api/v1/funds/policy");
    const plain = createApiClient({ baseUrl: "http://api.test", fetch, retry: {} });
    await plain.POST("/api/v1/users", { body: { displayName: "d", email: "e@example.com", roles: ["ROLE_USER"] } });
    expect(sent.map((s) => s.key)).toEqual(["mine", null, null, null]);
  });

  it("retries nothing without the option", async () => {
    const { fetch, sent } = scripted(answer(503), answer(200));
    expect((await createApiClient({ baseUrl: "http://api.test", fetch }).GET("/api/v1/funds/policy")).response.status).toBe(503);
    expect(sent).toHaveLength(1);
  });
});
