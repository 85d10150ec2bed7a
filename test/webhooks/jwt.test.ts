import { generateKeyPairSync, sign } from "node:crypto";
import { generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { htbS256 } from "../../src/webhooks/body.js";
import { JwksCache } from "../../src/webhooks/jwks-cache.js";
import { verifyWebhookJwt, type VerifyWebhookJwtInput } from "../../src/webhooks/jwt.js";
import { b64url, expectApiError, makeKey, rejection, serveJson, signJwt, TestServer, type Alg, type TestKey } from "./helpers.js";

const NOW = 1_763_773_200;
const BASE_URL = "https://tenant.example";
const LISTENER_URL = `${BASE_URL}/api/v1/webhooks/incoming/wh_7Hq2Lr9sVx3mNc8K`;
const EVENT_ID = "9f1c2b7e-4d3a-4e5f-8a6b-7c8d9e0f1a2b";
const BODY = Buffer.from('{ "z" :1,\n  "a":"café ✓" ,"n":2 }', "utf8");

const keys = {} as Record<Alg, TestKey>;
let unlisted: TestKey;
let server: TestServer;
let jwks: { keys: unknown[] };

beforeAll(async () => {
  keys.RS256 = await makeKey("RS256", "rsa-1");
  keys.ES256 = await makeKey("ES256", "ec-1");
  keys.EdDSA = await makeKey("EdDSA", "ed-1");
  unlisted = await makeKey("ES256", "not-in-jwks");
  jwks = { keys: [keys.RS256.publicJwk, keys.ES256.publicJwk, keys.EdDSA.publicJwk] };
  server = await TestServer.start(serveJson(() => jwks));
});
afterAll(() => server.close());

const claims = (over: Record<string, unknown> = {}): Record<string, unknown> => {
  const base: Record<string, unknown> = { sub: BASE_URL, aud: LISTENER_URL, exp: NOW + 300, jti: EVENT_ID, htm: "POST", htb_s256: htbS256(BODY) };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return base;
};

function newCache(clock = new ManualClock(NOW * 1000)) {
  return new JwksCache({ clock, fetchOptions: { allowInsecure: true } });
}

function input(token: string | undefined, cache: JwksCache, over: Partial<VerifyWebhookJwtInput> = {}): VerifyWebhookJwtInput {
  return {
    authorization: token === undefined ? undefined : `Bearer ${token}`,
    jwksUrl: server.url(),
    cache,
    baseUrl: BASE_URL,
    listenerUrl: LISTENER_URL,
    eventId: EVENT_ID,
    rawBody: BODY,
    clock: new ManualClock(NOW * 1000),
    ...over,
  };
}

async function refused(promise: Promise<unknown>, check: string, reason = "INVALID_JWT") {
  const e = expectApiError(await rejection(promise), 401, reason);
  expect(e.metadata.check).toBe(check);
  return e;
}

describe.each(["RS256", "ES256", "EdDSA"] as const)("verifyWebhookJwt with %s", (alg) => {
  const cache = newCache();
  const key = () => keys[alg];
  const verify = async (payload: Record<string, unknown>, over: Partial<VerifyWebhookJwtInput> = {}) =>
    verifyWebhookJwt(input(await signJwt(key(), payload), cache, over));

  it("accepts a token with every claim right", async () => {
    const result = await verify(claims());
    expect(result).toMatchObject({ sub: BASE_URL, aud: LISTENER_URL, jti: EVENT_ID, htm: "POST" });
  });

  it("accepts jti in another case than the header, and exp exactly 600 s ahead", async () => {
    await expect(verify(claims({ jti: EVENT_ID.toUpperCase() }))).resolves.toBeTruthy();
    await expect(verify(claims(), { eventId: EVENT_ID.toUpperCase() })).resolves.toBeTruthy();
    await expect(verify(claims({ exp: NOW + 600 }))).resolves.toBeTruthy();
  });

  it.each(["sub", "aud", "exp", "jti", "htm", "htb_s256"])("refuses a token without %s", async (claim) => {
    const e = await refused(verify(claims({ [claim]: undefined })), claim);
    expect(e.message).toContain(claim);
  });

  it.each([
    ["sub", { sub: "https://other-tenant.example" }],
    ["sub", { sub: `${BASE_URL}/` }],
    ["aud", { aud: "https://tenant.example/api/v1/webhooks/incoming/wh_other" }],
    ["aud", { aud: [LISTENER_URL, "https://elsewhere.example"] }],
    ["aud", { aud: BASE_URL }],
    ["exp", { exp: NOW }],
    ["exp", { exp: NOW - 1 }],
    ["exp", { exp: NOW + 601 }],
    ["exp", { exp: NOW + 11 * 60 }],
    ["exp", { exp: String(NOW + 60) }],
    ["jti", { jti: "0b7c5a1e-3f2d-4c6b-9a8e-1d2f3a4b5c6d" }],
    ["jti", { jti: 42 }],
    ["htm", { htm: "GET" }],
    ["htm", { htm: "post" }],
    ["htb_s256", { htb_s256: htbS256(Buffer.from("{}")) }],
    ["htb_s256", { htb_s256: "" }],
    ["htb_s256", { htb_s256: 7 }],
    ["nbf", { nbf: NOW + 60 }],
  ])("refuses a wrong %s (%j)", async (check, over) => {
    await refused(verify(claims(over)), check);
  });

  it("accepts aud as a one-element array", async () => {
    await expect(verify(claims({ aud: [LISTENER_URL] }))).resolves.toBeTruthy();
  });

  it("refuses a body that does not match htb_s256", async () => {
    await refused(verify(claims(), { rawBody: Buffer.from('{"z":1}') }), "htb_s256");
  });

  it("refuses a token whose signature does not verify", async () => {
    const token = await signJwt(key(), claims());
    const [h, , sig] = token.split(".");
    const forged = `${h}.${b64url(claims({ extra: 1 }))}.${sig}`;
    await refused(verifyWebhookJwt(input(forged, cache)), "signature");
  });

  it("refuses a token signed by a key that is not the one its kid names", async () => {
    const other = await makeKey(alg, key().kid);
    await refused(verifyWebhookJwt(input(await signJwt(other, claims()), cache)), "signature");
  });
});

describe("verifyWebhookJwt: header, algorithms and the JWKS", () => {
  const cache = newCache();

  it("refuses a missing Authorization header with 401 MISSING_AUTHORIZATION", async () => {
    expectApiError(await rejection(verifyWebhookJwt(input(undefined, cache))), 401, "MISSING_AUTHORIZATION");
    expectApiError(await rejection(verifyWebhookJwt({ ...input(undefined, cache), authorization: "  " })), 401, "MISSING_AUTHORIZATION");
  });

  it("refuses another scheme or a token that is not a compact JWS, never echoing it", async () => {
    const token = await signJwt(keys.ES256, claims());
    const e = await refused(verifyWebhookJwt({ ...input(undefined, cache), authorization: `Basic ${token}` }), "scheme");
    expect(e.message).not.toContain(token);
    await refused(verifyWebhookJwt({ ...input(undefined, cache), authorization: "Bearer" }), "format");
    await refused(verifyWebhookJwt({ ...input(undefined, cache), authorization: "Bearer a.b" }), "format");
    await refused(verifyWebhookJwt({ ...input(undefined, cache), authorization: "Bearer a.b.c.d.e" }), "format");
    await refused(verifyWebhookJwt({ ...input(undefined, cache), authorization: `Bearer ${"a".repeat(9000)}.b.c` }), "format");
    await refused(verifyWebhookJwt({ ...input(undefined, cache), authorization: "Bearer e30.e30.e30" }), "alg");
  });

  it("accepts the scheme in any case", async () => {
    const token = await signJwt(keys.ES256, claims());
    await expect(verifyWebhookJwt({ ...input(undefined, cache), authorization: `bearer ${token}` })).resolves.toBeTruthy();
  });

  it("refuses alg none", async () => {
    for (const alg of ["none", "None", "NONE"]) {
      const token = `${b64url({ alg, kid: "rsa-1", typ: "JWT" })}.${b64url(claims())}.`;
      await refused(verifyWebhookJwt(input(token, cache)), "alg");
    }
  });

  it("refuses HS256, including a token MACed with a JWKS public key (algorithm confusion)", async () => {
    const hs = await new SignJWT(claims()).setProtectedHeader({ alg: "HS256", kid: "rsa-1" }).sign(new TextEncoder().encode(JSON.stringify(keys.RS256.publicJwk)));
    await refused(verifyWebhookJwt(input(hs, cache)), "alg");
  });

  it.each(["RS384", "PS256", "ES384", "ES512", "Ed25519"])("refuses %s", async (alg) => {
    const token = `${b64url({ alg, kid: "rsa-1" })}.${b64url(claims())}.c2ln`;
    await refused(verifyWebhookJwt(input(token, cache)), "alg");
  });

  it("refuses a token without kid, or with a kid that is not a string", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const noKid = await new SignJWT(claims()).setProtectedHeader({ alg: "ES256" }).sign(privateKey);
    await refused(verifyWebhookJwt(input(noKid, cache)), "kid");
    const numericKid = `${b64url({ alg: "ES256", kid: 1 })}.${b64url(claims())}.c2ln`;
    await refused(verifyWebhookJwt(input(numericKid, cache)), "kid");
  });

  it("refuses a kid that is not in the JWKS", async () => {
    await refused(verifyWebhookJwt(input(await signJwt(unlisted, claims()), cache)), "kid");
  });

  it("refuses an RSA key shorter than 2048 bits (the same token path with 2048 bits verifies)", async () => {
    const tokenFor = async (modulusLength: number) => {
      const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength });
      const jwk = { ...publicKey.export({ format: "jwk" }), kid: `rsa-${modulusLength}`, alg: "RS256", use: "sig" };
      const signingInput = `${b64url({ alg: "RS256", kid: jwk.kid })}.${b64url(claims())}`;
      return { jwk, token: `${signingInput}.${sign("sha256", Buffer.from(signingInput), privateKey).toString("base64url")}` };
    };
    const weak = await tokenFor(1024);
    const strong = await tokenFor(2048);
    const host = await TestServer.start(serveJson(() => ({ keys: [weak.jwk, strong.jwk] })));
    try {
      const c = newCache();
      await expect(verifyWebhookJwt(input(strong.token, c, { jwksUrl: host.url() }))).resolves.toBeTruthy();
      await refused(verifyWebhookJwt(input(weak.token, c, { jwksUrl: host.url() })), "signature");
    } finally {
      await host.close();
    }
  });

  it("refuses a kid whose key is of another type than the alg (an EC kid with RS256)", async () => {
    const token = await signJwt({ ...keys.RS256, kid: "ec-1" }, claims());
    await refused(verifyWebhookJwt(input(token, cache)), "kid");
  });
});

describe("verifyWebhookJwt: unknown kids and refetching", () => {
  it("refetches once for an unknown kid, not again within the cooldown, and finds a rotated key", async () => {
    const clock = new ManualClock(NOW * 1000);
    const cache = newCache(clock);
    const at = (c: ManualClock) => ({ clock: c });
    const before = server.hits;
    await verifyWebhookJwt(input(await signJwt(keys.ES256, claims()), cache, at(clock)));
    expect(server.hits - before).toBe(1);

    clock.advance(30_000);
    const later = new ManualClock(clock.now());
    const soon = claims({ exp: Math.floor(clock.now() / 1000) + 300 });
    await refused(verifyWebhookJwt(input(await signJwt(unlisted, soon), cache, at(later))), "kid");
    expect(server.hits - before).toBe(2);
    const second = await makeKey("EdDSA", "also-unknown");
    await refused(verifyWebhookJwt(input(await signJwt(second, soon), cache, at(later))), "kid");
    expect(server.hits - before).toBe(2);

    // The sender publishes the new key; after the cooldown, its kid is fetched once and accepted.
    jwks = { keys: [...jwks.keys, second.publicJwk] };
    try {
      clock.advance(30_000);
      const t = new ManualClock(clock.now());
      const fresh = claims({ exp: Math.floor(clock.now() / 1000) + 300 });
      await expect(verifyWebhookJwt(input(await signJwt(second, fresh), cache, at(t)))).resolves.toBeTruthy();
      expect(server.hits - before).toBe(3);
    } finally {
      jwks = { keys: jwks.keys.slice(0, 3) };
    }
  });
});

describe("verifyWebhookJwt: a JWKS that cannot be fetched is 401 JWKS_UNAVAILABLE", () => {
  const sign = () => signJwt(keys.ES256, claims());

  it("unreachable", async () => {
    const gone = await TestServer.start(serveJson(() => jwks));
    const url = gone.url();
    await gone.close();
    await refused(verifyWebhookJwt(input(await sign(), newCache(), { jwksUrl: url })), "jwks", "JWKS_UNAVAILABLE");
  });

  it("a redirect", async () => {
    const redirecting = await TestServer.start((_req, res) => {
      res.writeHead(302, { location: server.url() });
      res.end();
    });
    try {
      await refused(verifyWebhookJwt(input(await sign(), newCache(), { jwksUrl: redirecting.url() })), "jwks", "JWKS_UNAVAILABLE");
    } finally {
      await redirecting.close();
    }
  });

  it("oversized", async () => {
    const big = await TestServer.start(serveJson(() => ({ keys: jwks.keys, pad: "x".repeat(70_000) })));
    try {
      const e = await refused(verifyWebhookJwt(input(await sign(), newCache(), { jwksUrl: big.url() })), "jwks", "JWKS_UNAVAILABLE");
      expect(e.metadata.cause).toBe("TOO_LARGE");
    } finally {
      await big.close();
    }
  });

  it("an http URL without allowInsecure", async () => {
    const strict = new JwksCache({ clock: new ManualClock(NOW * 1000) });
    const before = server.hits;
    const e = await refused(verifyWebhookJwt(input(await sign(), strict)), "jwks", "JWKS_UNAVAILABLE");
    expect(e.metadata.cause).toBe("INSECURE_URL");
    expect(server.hits).toBe(before);
  });

  it("an https URL on localhost (loopback) without allowInsecure", async () => {
    const strict = new JwksCache({ clock: new ManualClock(NOW * 1000) });
    const e = await refused(verifyWebhookJwt(input(await sign(), strict, { jwksUrl: `https://localhost:${server.port}/jwks.json` })), "jwks", "JWKS_UNAVAILABLE");
    expect(e.metadata.cause).toBe("ADDRESS_REFUSED");
  });
});
