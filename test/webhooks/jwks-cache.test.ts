import { beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { JwksCache, usableKeys } from "../../src/webhooks/jwks-cache.js";
import { JwksFetchError, type JwksDocument } from "../../src/webhooks/jwks-fetch.js";
import { expectApiError, makeKey, rejection, serveJson, TestServer, type TestKey } from "./helpers.js";

const URL_A = "https://a.example/jwks.json";

/** A fetcher that counts calls and serves whatever `state.jwks` is (or fails with `state.error`). */
function countingFetcher(initial: JwksDocument) {
  const state: { jwks: JwksDocument; error?: JwksFetchError; calls: number; delayMs: number } = { jwks: initial, calls: 0, delayMs: 0 };
  const fetcher = async (_url: string) => {
    state.calls++;
    if (state.delayMs) await new Promise((r) => setTimeout(r, state.delayMs));
    if (state.error) throw state.error;
    return structuredClone(state.jwks);
  };
  return { state, fetcher };
}

let rsa: TestKey;
let ec: TestKey;
let ed: TestKey;
let rotated: TestKey;
beforeAll(async () => {
  [rsa, ec, ed, rotated] = await Promise.all([makeKey("RS256", "rsa-1"), makeKey("ES256", "ec-1"), makeKey("EdDSA", "ed-1"), makeKey("ES256", "ec-2")]);
});

/** A cache over a counting fetcher of `jwks`, on a clock the test moves. */
function cacheOf(jwks: Parameters<typeof countingFetcher>[0]) {
  const clock = new ManualClock(0);
  const { state, fetcher } = countingFetcher(jwks);
  return { clock, state, cache: new JwksCache({ clock, fetcher }) };
}

describe("JwksCache", () => {
  it("fetches once and serves later requests from the cache until the TTL", async () => {
    const { clock, state, cache } = cacheOf({ keys: [rsa.publicJwk, ec.publicJwk] });
    await cache.keySetFor(URL_A, "rsa-1");
    await cache.keySetFor(URL_A, "ec-1");
    clock.advance(10 * 60_000 - 1);
    await cache.keySetFor(URL_A, "rsa-1");
    expect(state.calls).toBe(1);
    clock.advance(1);
    await cache.keySetFor(URL_A, "rsa-1");
    expect(state.calls).toBe(2);
  });

  it("refetches once for an unknown kid, not again within the cooldown, and again after it", async () => {
    const { clock, state, cache } = cacheOf({ keys: [ec.publicJwk] });
    await cache.keySetFor(URL_A, "ec-1");
    expect(state.calls).toBe(1);
    clock.advance(30_000);
    expectApiError(await rejection(cache.keySetFor(URL_A, "unknown-1")), 401, "INVALID_JWT");
    expect(state.calls).toBe(2);
    clock.advance(29_999);
    const e = expectApiError(await rejection(cache.keySetFor(URL_A, "unknown-2")), 401, "INVALID_JWT");
    expect(e.metadata.check).toBe("kid");
    expect(state.calls).toBe(2);
    clock.advance(1);
    expectApiError(await rejection(cache.keySetFor(URL_A, "unknown-3")), 401, "INVALID_JWT");
    expect(state.calls).toBe(3);
  });

  it("an unknown kid right after the first fetch waits for the cooldown", async () => {
    const { state, cache } = cacheOf({ keys: [ec.publicJwk] });
    expectApiError(await rejection(cache.keySetFor(URL_A, "nope")), 401, "INVALID_JWT");
    expect(state.calls).toBe(1);
  });

  it("picks up a rotated key on the refetch for its unknown kid", async () => {
    const { clock, state, cache } = cacheOf({ keys: [ec.publicJwk] });
    await cache.keySetFor(URL_A, "ec-1");
    state.jwks = { keys: [ec.publicJwk, rotated.publicJwk] };
    clock.advance(30_000);
    expect((await cache.keySetFor(URL_A, "ec-2")).kids.has("ec-2")).toBe(true);
    expect(state.calls).toBe(2);
  });

  it("shares one in-flight fetch between concurrent requests", async () => {
    const clock = new ManualClock(0);
    const { state, fetcher } = countingFetcher({ keys: [rsa.publicJwk, ec.publicJwk, ed.publicJwk] });
    state.delayMs = 50;
    const cache = new JwksCache({ clock, fetcher });
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => cache.keySetFor(URL_A, i % 4 === 3 ? "unknown" : ["rsa-1", "ec-1", "ed-1"][i % 4]!)),
    );
    expect(state.calls).toBe(1);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(15);
  });

  it("caches per URL", async () => {
    const { state, cache } = cacheOf({ keys: [ec.publicJwk] });
    await cache.keySetFor(URL_A, "ec-1");
    await cache.keySetFor("https://b.example/jwks.json", "ec-1");
    await cache.keySetFor(URL_A, "ec-1");
    expect(state.calls).toBe(2);
  });

  it("answers 401 JWKS_UNAVAILABLE when the JWKS cannot be fetched, and backs off before trying again", async () => {
    const clock = new ManualClock(0);
    const { state, fetcher } = countingFetcher({ keys: [ec.publicJwk] });
    state.error = new JwksFetchError("CONNECT_FAILED", "the JWKS host could not be reached");
    const cache = new JwksCache({ clock, fetcher });
    const e = expectApiError(await rejection(cache.keySetFor(URL_A, "ec-1")), 401, "JWKS_UNAVAILABLE");
    expect(e.metadata.cause).toBe("CONNECT_FAILED");
    expectApiError(await rejection(cache.keySetFor(URL_A, "ec-1")), 401, "JWKS_UNAVAILABLE");
    expect(state.calls).toBe(1);
    state.error = undefined;
    clock.advance(5_000);
    await cache.keySetFor(URL_A, "ec-1");
    expect(state.calls).toBe(2);
  });

  it("does not use expired keys when the refresh fails, but keeps unexpired ones when an unknown-kid refetch fails", async () => {
    const { clock, state, cache } = cacheOf({ keys: [ec.publicJwk] });
    await cache.keySetFor(URL_A, "ec-1");
    state.error = new JwksFetchError("TIMEOUT", "slow");
    clock.advance(30_000);
    expectApiError(await rejection(cache.keySetFor(URL_A, "other")), 401, "JWKS_UNAVAILABLE");
    await cache.keySetFor(URL_A, "ec-1"); // still within the TTL
    clock.advance(10 * 60_000);
    expectApiError(await rejection(cache.keySetFor(URL_A, "ec-1")), 401, "JWKS_UNAVAILABLE");
  });

  it("maps a fetcher's unexpected error to JWKS_UNAVAILABLE too", async () => {
    const cache = new JwksCache({ clock: new ManualClock(0), fetcher: async () => Promise.reject(new Error("boom")) });
    expectApiError(await rejection(cache.keySetFor(URL_A, "k")), 401, "JWKS_UNAVAILABLE");
  });

  it("fetches through the guarded fetcher by default: an http URL is refused without allowInsecure", async () => {
    const server = await TestServer.start(serveJson(() => ({ keys: [ec.publicJwk] })));
    try {
      const strict = new JwksCache({ clock: new ManualClock(0) });
      const e = expectApiError(await rejection(strict.keySetFor(server.url(), "ec-1")), 401, "JWKS_UNAVAILABLE");
      expect(e.metadata.cause).toBe("INSECURE_URL");
      expect(server.hits).toBe(0);
      const dev = new JwksCache({ clock: new ManualClock(0), fetchOptions: { allowInsecure: true } });
      expect((await dev.keySetFor(server.url(), "ec-1")).kids.has("ec-1")).toBe(true);
      expect(server.hits).toBe(1);
    } finally {
      await server.close();
    }
  });
});

describe("usableKeys", () => {
  it("keeps only public RSA, EC P-256 and Ed25519 signature keys with a kid", () => {
    const keys = usableKeys({
      keys: [
        rsa.publicJwk,
        ec.publicJwk,
        ed.publicJwk,
        { ...ec.publicJwk, kid: "p384", crv: "P-384" },
        { ...ed.publicJwk, kid: "x25519", crv: "X25519" },
        { ...ed.publicJwk, kid: "ed448", crv: "Ed448" },
        { kty: "oct", k: "c2VjcmV0", kid: "hmac" },
        { ...rsa.publicJwk, kid: "enc", use: "enc" },
        { ...ec.publicJwk, kid: "private", d: "AAAA" },
        { ...ec.publicJwk, kid: undefined },
        { ...ec.publicJwk, kid: "" },
        null,
        "string",
        [],
        { kty: "RSA", kid: "no-n", e: "AQAB" },
      ],
    });
    expect(keys.map((k) => k.kid)).toEqual(["rsa-1", "ec-1", "ed-1"]);
  });
});
