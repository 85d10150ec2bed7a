// JWT-authenticated webhooks through real HTTP: RS256, ES256 and EdDSA keys from a JWKS this test
// serves on 127.0.0.1, each required claim wrong or missing in turn, the header's kid and alg,
// an unreachable JWKS, and the request headers still required. Every failure is a 401 and never
// consumes the event id.
import { createHash, createHmac } from "node:crypto";
import { exportSPKI, generateKeyPair, importJWK, SignJWT, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendWebhookEvent, webhookJwt } from "../../../src/client/webhook-sender.js";
import { freePort } from "../../support/process.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import {
  createHooked,
  errorInfo,
  evaluateStep,
  executionsOf,
  expectAccepted,
  expectRefused,
  JwksHost,
  newEventId,
  postRaw,
  settled,
  signClaims,
  signingKey,
  unixTime,
  webhookClaims,
  type Alg,
  type Answer,
  type Hooked,
  type SigningKey,
} from "./helpers.js";

const ALGS: Alg[] = ["RS256", "ES256", "EdDSA"];

let ts: TestServer;
let jwks: JwksHost;
const keys = new Map<Alg, SigningKey>();
/** Signs with the kid of a key in the JWKS, but is not that key. */
const impostors = new Map<Alg, SigningKey>();
let hook: Hooked;

beforeAll(async () => {
  // Every check fails many times here, from one address on one listener: the failure budget that
  // would refuse them is the subject of rate-limits.test.ts.
  ts = await startTestServer({ RATE_LIMIT_LISTENER_FAILURES: "off" });
  // webhookJwt (the sender's function) stamps tokens with the real time.
  ts.clock.set(Date.now());
  jwks = await JwksHost.start();
  for (const alg of ALGS) {
    keys.set(alg, await signingKey(alg, `kid-${alg}`));
    impostors.set(alg, await signingKey(alg, `kid-${alg}`));
  }
  const jwksUrl = jwks.serve("/jwks.json", [...keys.values()].map((k) => k.publicJwk));
  hook = await createHooked(ts, { jwksUrl, steps: [evaluateStep("echo", { who: "ctx.trigger.who" })] });
});
afterAll(async () => {
  await ts?.stop();
  await jwks?.close();
});

const key = (alg: Alg) => keys.get(alg)!;

/** Posts `body` with `Authorization: Bearer <token>` and the intake headers at the server's time. */
function sendJwt(url: string, token: string | undefined, body: string, eventId: string, headers: Record<string, string | undefined> = {}): Promise<Answer> {
  return postRaw(url, {
    headers: {
      "Content-Type": "application/json",
      "Webhook-Timestamp": unixTime(ts),
      "Webhook-Event-Id": eventId,
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
      ...headers,
    },
    body,
  });
}

/** Signs the claims of a valid request, with `changes` applied (undefined removes a claim), and sends it. */
async function deliver(alg: Alg, changes: Record<string, unknown> = {}, options: { eventId?: string; body?: string; url?: string; header?: Record<string, unknown>; signer?: SigningKey } = {}) {
  const eventId = options.eventId ?? newEventId();
  const body = options.body ?? `{"who":"${alg}"}`;
  const url = options.url ?? hook.url;
  const claims = { ...webhookClaims(ts, url, eventId, body), ...changes };
  const token = await signClaims(options.signer ?? key(alg), claims, options.header);
  return { eventId, answer: await sendJwt(url, token, body, eventId) };
}

/** A 401 INVALID_JWT naming the failed check. */
function expectJwtRefused(answer: Answer, check: string): void {
  expectRefused(answer, 401, "INVALID_JWT");
  expect(errorInfo(answer.body).metadata?.check).toBe(check);
  expect(answer.headers["www-authenticate"]).toMatch(/^Bearer/);
}

describe.each(ALGS)("%s", (alg) => {
  it("a token with every claim right is accepted (200) and runs the automation", async () => {
    const { eventId, answer } = await deliver(alg);
    const event = expectAccepted(answer);
    expect(event).toMatchObject({ eventId, outcome: "WEBHOOK_EVENT_OUTCOME_EXECUTED", listenerId: hook.listenerId });
    const execution = await settled(ts, event.automationExecutionId!);
    expect(execution.stepResults[0]).toMatchObject({ state: "STEP_STATE_DONE", output: { who: alg } });
  });

  it("sub: another URL or missing is 401", async () => {
    expectJwtRefused((await deliver(alg, { sub: "https://other-tenant.example.com" })).answer, "sub");
    expectJwtRefused((await deliver(alg, { sub: `${ts.url}/` })).answer, "sub");
    expectJwtRefused((await deliver(alg, { sub: undefined })).answer, "sub");
  });

  it("aud: another listener's URL, the base URL, or missing is 401", async () => {
    expectJwtRefused((await deliver(alg, { aud: hook.url.replace(hook.listenerId, "wh_someOtherListener1") })).answer, "aud");
    expectJwtRefused((await deliver(alg, { aud: ts.url })).answer, "aud");
    expectJwtRefused((await deliver(alg, { aud: [hook.url, "https://elsewhere.example.com"] })).answer, "aud");
    expectJwtRefused((await deliver(alg, { aud: undefined })).answer, "aud");
  });

  it("exp: missing, past, now, or more than 10 minutes ahead is 401; exactly 10 minutes ahead is accepted", async () => {
    const now = Math.floor(ts.clock.now() / 1000);
    expectJwtRefused((await deliver(alg, { exp: undefined })).answer, "exp");
    expectJwtRefused((await deliver(alg, { exp: now - 1 })).answer, "exp");
    expectJwtRefused((await deliver(alg, { exp: now - 3600 })).answer, "exp");
    expectJwtRefused((await deliver(alg, { exp: now })).answer, "exp");
    expectJwtRefused((await deliver(alg, { exp: now + 11 * 60 })).answer, "exp");
    expectJwtRefused((await deliver(alg, { exp: now + 601 })).answer, "exp");
    expectJwtRefused((await deliver(alg, { exp: now + 365 * 86_400 })).answer, "exp");
    expectAccepted((await deliver(alg, { exp: now + 600 })).answer);
  });

  it("jti: another id or missing is 401", async () => {
    expectJwtRefused((await deliver(alg, { jti: newEventId() })).answer, "jti");
    expectJwtRefused((await deliver(alg, { jti: undefined })).answer, "jti");
  });

  it("htm: other than POST, or missing, is 401", async () => {
    expectJwtRefused((await deliver(alg, { htm: "GET" })).answer, "htm");
    expectJwtRefused((await deliver(alg, { htm: "post" })).answer, "htm");
    expectJwtRefused((await deliver(alg, { htm: undefined })).answer, "htm");
  });

  it("htb_s256: the hash of another body, a padded or hex hash, or missing is 401", async () => {
    const body = `{"who":"${alg}"}`;
    const digest = createHash("sha256").update(body).digest();
    expectJwtRefused((await deliver(alg, { htb_s256: createHash("sha256").update(`${body} `).digest("base64url") }, { body })).answer, "htb_s256");
    expectJwtRefused((await deliver(alg, { htb_s256: digest.toString("base64") }, { body })).answer, "htb_s256");
    expectJwtRefused((await deliver(alg, { htb_s256: digest.toString("hex") }, { body })).answer, "htb_s256");
    expectJwtRefused((await deliver(alg, { htb_s256: undefined }, { body })).answer, "htb_s256");
    // The token is bound to the body it was signed for: the same token with another body is refused.
    const eventId = newEventId();
    const token = await signClaims(key(alg), webhookClaims(ts, hook.url, eventId, body));
    expectJwtRefused(await sendJwt(hook.url, token, `{"who":"someone else"}`, eventId), "htb_s256");
  });

  it("kid: not in the JWKS, or absent, is 401; a key that is not the JWKS key under the same kid fails the signature", async () => {
    expectJwtRefused((await deliver(alg, {}, { header: { kid: "kid-unknown" } })).answer, "kid");
    expectJwtRefused((await deliver(alg, {}, { header: { kid: undefined } })).answer, "kid");
    expectJwtRefused((await deliver(alg, {}, { signer: impostors.get(alg)! })).answer, "signature");
  });

  it("a failed token never consumes the event id: the genuine one with the same id is then accepted, and a replay is 409", async () => {
    const eventId = newEventId();
    expectJwtRefused((await deliver(alg, { htm: "PUT" }, { eventId })).answer, "htm");
    expectJwtRefused((await deliver(alg, {}, { eventId, signer: impostors.get(alg)! })).answer, "signature");
    expectAccepted((await deliver(alg, {}, { eventId })).answer);
    expectRefused((await deliver(alg, {}, { eventId })).answer, 409, "DUPLICATE_EVENT");
    // A duplicate whose token fails is 401, not 409.
    expectJwtRefused((await deliver(alg, { aud: undefined }, { eventId })).answer, "aud");
  });
});

describe("the header and the Authorization scheme", () => {
  const body = '{"who":"x"}';

  it("alg none is refused (401)", async () => {
    const eventId = newEventId();
    const encode = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const unsigned = `${encode({ alg: "none", kid: "kid-RS256", typ: "JWT" })}.${encode(webhookClaims(ts, hook.url, eventId, body))}.`;
    expectJwtRefused(await sendJwt(hook.url, unsigned, body, eventId), "alg");
  });

  it("HS256 is refused, keyed with a made-up secret or with the RSA public key (algorithm confusion)", async () => {
    const encode = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const hs256 = (secret: string | Buffer, eventId: string) => {
      const input = `${encode({ alg: "HS256", kid: "kid-RS256", typ: "JWT" })}.${encode(webhookClaims(ts, hook.url, eventId, body))}`;
      return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
    };
    const pem = await exportSPKI((await importJWK(key("RS256").publicJwk, "RS256")) as CryptoKey);
    for (const secret of ["shared-secret", pem]) {
      const eventId = newEventId();
      expectJwtRefused(await sendJwt(hook.url, hs256(secret, eventId), body, eventId), "alg");
    }
    // Other asymmetric algorithms than the three are refused too.
    for (const alg of ["PS256", "ES384", "RS512"]) {
      const eventId = newEventId();
      const { privateKey } = await generateKeyPair(alg);
      const token = await new SignJWT(webhookClaims(ts, hook.url, eventId, body)).setProtectedHeader({ alg, kid: "kid-RS256" }).sign(privateKey);
      expectJwtRefused(await sendJwt(hook.url, token, body, eventId), "alg");
    }
  });

  it("Authorization missing, empty, another scheme or a malformed token is 401", async () => {
    const eventId = newEventId();
    const token = await signClaims(key("ES256"), webhookClaims(ts, hook.url, eventId, body));
    expectRefused(await sendJwt(hook.url, undefined, body, eventId), 401, "MISSING_AUTHORIZATION");
    expectRefused(await sendJwt(hook.url, undefined, body, eventId, { Authorization: "" }), 401, "MISSING_AUTHORIZATION");
    expectJwtRefused(await sendJwt(hook.url, undefined, body, eventId, { Authorization: `Basic ${token}` }), "scheme");
    expectJwtRefused(await sendJwt(hook.url, undefined, body, eventId, { Authorization: "Bearer not-a-jwt" }), "format");
    expectJwtRefused(await sendJwt(hook.url, undefined, body, eventId, { Authorization: `Bearer ${"a".repeat(9000)}.b.c` }), "format");
    // An HMAC signature does not authenticate a JWT listener.
    expectRefused(await sendJwt(hook.url, undefined, body, eventId, { "Webhook-Signature": "AAAA" }), 401, "MISSING_AUTHORIZATION");
    // None of these consumed the id.
    expectAccepted(await sendJwt(hook.url, token, body, eventId));
  });

  it("Webhook-Timestamp and Webhook-Event-Id are still required and checked (400) with a valid token", async () => {
    const eventId = newEventId();
    const token = await signClaims(key("EdDSA"), webhookClaims(ts, hook.url, eventId, body));
    expectRefused(await sendJwt(hook.url, token, body, eventId, { "Webhook-Timestamp": undefined }), 400, "MISSING_HEADER");
    expectRefused(await sendJwt(hook.url, token, body, eventId, { "Webhook-Timestamp": unixTime(ts, 301) }), 400, "TIMESTAMP_OUT_OF_WINDOW");
    expectRefused(await sendJwt(hook.url, token, body, eventId, { "Webhook-Event-Id": undefined }), 400, "MISSING_HEADER");
    expectRefused(await sendJwt(hook.url, token, body, eventId, { "Content-Type": "text/plain" }), 400, "UNSUPPORTED_CONTENT_TYPE");
    expectAccepted(await sendJwt(hook.url, token, body, eventId));
  });
});

describe("the JWKS", () => {
  it("an unreachable JWKS (nothing listening) is 401 JWKS_UNAVAILABLE", async () => {
    const port = await freePort();
    const dead = await createHooked(ts, { jwksUrl: `http://127.0.0.1:${port}/jwks.json` });
    const { answer } = await deliver("RS256", {}, { url: dead.url });
    expectRefused(answer, 401, "JWKS_UNAVAILABLE");
    expect(errorInfo(answer.body).metadata?.check).toBe("jwks");
  });

  it("a JWKS URL answering 404 or something that is not a JWKS is 401 JWKS_UNAVAILABLE", async () => {
    const missing = await createHooked(ts, { jwksUrl: jwks.url("/nothing-here.json") });
    expectRefused((await deliver("ES256", {}, { url: missing.url })).answer, 401, "JWKS_UNAVAILABLE");
    jwks.documents.set("/not-a-jwks.json", { hello: "world" });
    const wrong = await createHooked(ts, { jwksUrl: jwks.url("/not-a-jwks.json") });
    expectRefused((await deliver("ES256", {}, { url: wrong.url })).answer, 401, "JWKS_UNAVAILABLE");
  });

  it("keys are fetched once and cached, not on every request", async () => {
    const url = jwks.serve("/cached.json", [key("EdDSA").publicJwk]);
    const cached = await createHooked(ts, { jwksUrl: url });
    for (let i = 0; i < 3; i++) expectAccepted((await deliver("EdDSA", {}, { url: cached.url })).answer);
    expect(jwks.hits.get("/cached.json")).toBe(1);
  });

  it("a JWKS holding only another algorithm's key does not verify this one's token", async () => {
    const url = jwks.serve("/rsa-only.json", [key("RS256").publicJwk]);
    const rsaOnly = await createHooked(ts, { jwksUrl: url });
    expectJwtRefused((await deliver("ES256", {}, { url: rsaOnly.url })).answer, "kid");
    expectAccepted((await deliver("RS256", {}, { url: rsaOnly.url })).answer);
  });
});

describe("for senders", () => {
  it("sendWebhookEvent and webhookJwt produce requests the intake accepts, with each key type", async () => {
    for (const alg of ALGS) {
      const k = key(alg);
      const auth = { privateKey: k.privateJwk, kid: k.kid, alg, baseUrl: ts.url };
      const sent = await sendWebhookEvent({ url: hook.url, body: `{"who":"sender-${alg}"}`, auth: { jwt: auth }, timestamp: unixTime(ts) });
      expect(sent.status, JSON.stringify(sent.response)).toBe(200);
      const eventId = newEventId();
      const token = await webhookJwt(auth, hook.url, eventId, "[]");
      expectAccepted(await sendJwt(hook.url, token, "[]", eventId));
    }
    await ts.server.worker.idle();
    const outputs = (await executionsOf(ts.admin, hook.id)).map((e) => e.stepResults[0]?.output);
    for (const alg of ALGS) expect(outputs).toContainEqual({ who: `sender-${alg}` });
  });
});
