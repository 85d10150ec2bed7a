// Attacks on the webhook JWT path, over real HTTP. Each forged request is 401 INVALID_JWT naming
// the check that caught it, consumes nothing (the genuine request with the same event id is then
// accepted), and makes the server fetch nothing but the listener's own JWKS.
import { createHmac, createPrivateKey, sign as cryptoSign } from "node:crypto";
import { exportSPKI, importJWK, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDialect } from "../../support/database.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { createHooked, errorInfo, expectAccepted, expectRefused, JwksHost, newEventId, postRaw, signClaims, signingKey, unixTime, webhookClaims, type Answer, type Hooked, type SigningKey } from "./helpers.js";

const counts = reliabilitySuite("webhook-jwt-attacks", testDialect());
let ts: TestServer;
let jwks: JwksHost;
let hook: Hooked;
let es256: SigningKey;
let rs256: SigningKey;
/** The attacker's own key pair, served from a JWKS the attacker controls. */
let attacker: SigningKey;
let attackerJwks: string;

const JWKS_PATH = "/jwks.json";
const ATTACKER_PATH = "/attacker/jwks.json";
const body = '{"event":"card.lost"}';
const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");

beforeAll(async () => {
  ts = await startTestServer();
  jwks = await JwksHost.start();
  es256 = await signingKey("ES256", "k-es");
  rs256 = await signingKey("RS256", "k-rs");
  attacker = await signingKey("ES256", "k-es");
  attackerJwks = jwks.serve(ATTACKER_PATH, [attacker.publicJwk]);
  hook = await createHooked(ts, { jwksUrl: jwks.serve(JWKS_PATH, [es256.publicJwk, rs256.publicJwk]) });
});
afterAll(async () => {
  await ts?.stop();
  await jwks?.close();
});

function send(token: string, eventId: string, payload = body): Promise<Answer> {
  return postRaw(hook.url, {
    headers: { "Content-Type": "application/json", "Webhook-Timestamp": unixTime(ts), "Webhook-Event-Id": eventId, Authorization: `Bearer ${token}` },
    body: payload,
  });
}

const claims = (eventId: string, changes: Record<string, unknown> = {}) => ({ ...webhookClaims(ts, hook.url, eventId, body), ...changes });

/** A compact JWS over `header` and `payload` with the signature `sign` makes of its input. */
const compact = (header: object, payload: object, sign: (input: string) => string) => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${sign(input)}`;
};

/** An ES256 signature of `input` by `key` in `encoding`: JWS wants the raw r||s (ieee-p1363), not DER. */
function es256Signature(input: string, key: SigningKey, encoding: "der" | "ieee-p1363"): string {
  const privateKey = createPrivateKey({ key: key.privateJwk as never, format: "jwk" });
  return cryptoSign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: encoding }).toString("base64url");
}

interface Attack {
  name: string;
  token: (eventId: string) => Promise<string>;
  /** The `check` the 401 must name. */
  check: string;
  payload?: string;
}

const attacks: Attack[] = [
  { name: "alg none, no signature", check: "alg", token: async (id) => `${b64({ alg: "none", kid: "k-es" })}.${b64(claims(id))}.` },
  { name: "alg None (case games)", check: "alg", token: async (id) => `${b64({ alg: "None", kid: "k-es" })}.${b64(claims(id))}.` },
  {
    name: "HS256 keyed with the RSA public key (PEM) of the JWKS",
    check: "alg",
    token: async (id) => {
      const pem = await exportSPKI((await importJWK(rs256.publicJwk, "RS256")) as CryptoKey);
      return compact({ alg: "HS256", kid: "k-rs" }, claims(id), (input) => createHmac("sha256", pem).update(input).digest("base64url"));
    },
  },
  {
    name: "HS256 keyed with the public JWK's JSON",
    check: "alg",
    token: async (id) => compact({ alg: "HS256", kid: "k-es" }, claims(id), (input) => createHmac("sha256", JSON.stringify(es256.publicJwk)).update(input).digest("base64url")),
  },
  { name: "jku pointing at the attacker's JWKS", check: "signature", token: (id) => signClaims(attacker, claims(id), { jku: attackerJwks }) },
  { name: "x5u pointing at the attacker's host", check: "signature", token: (id) => signClaims(attacker, claims(id), { x5u: jwks.url("/attacker/cert.pem") }) },
  { name: "jwk embedded in the header (the attacker's key)", check: "signature", token: (id) => signClaims(attacker, claims(id), { jwk: attacker.publicJwk }) },
  {
    name: "x5c embedded in the header (a certificate chain the attacker made up)",
    check: "signature",
    token: (id) => signClaims(attacker, claims(id), { x5c: ["MIIBszCCAVmgAwIBAgIUQ" + "A".repeat(40)] }),
  },
  { name: "kid injected with a path", check: "kid", token: (id) => signClaims(attacker, claims(id), { kid: "../../../../etc/passwd" }) },
  { name: "kid injected with SQL", check: "kid", token: (id) => signClaims(attacker, claims(id), { kid: "k-es' OR '1'='1" }) },
  { name: "kid with a NUL byte and a URL", check: "kid", token: (id) => signClaims(attacker, claims(id), { kid: "k-es\u0000http://169.254.169.254/" }) },
  { name: "kid not in the JWKS", check: "kid", token: (id) => signClaims(attacker, claims(id), { kid: "unknown-kid" }) },
  { name: "kid of the JWKS, signed by another key", check: "signature", token: (id) => signClaims(attacker, claims(id)) },
  { name: "kid as a number", check: "kid", token: (id) => signClaims(es256, claims(id), { kid: 1 }) },
  ...(["sub", "aud", "exp", "jti", "htm", "htb_s256"] as const).map((claim) => ({
    name: `required claim ${claim} missing`,
    check: claim,
    token: (id: string) => signClaims(es256, claims(id, { [claim]: undefined })),
  })),
  { name: "exp ten years ahead", check: "exp", token: (id) => signClaims(es256, claims(id, { exp: Math.floor(ts.clock.now() / 1000) + 10 * 365 * 86_400 })) },
  { name: "exp 601 s ahead", check: "exp", token: (id) => signClaims(es256, claims(id, { exp: Math.floor(ts.clock.now() / 1000) + 601 })) },
  { name: "exp as a string", check: "exp", token: (id) => signClaims(es256, claims(id, { exp: String(Math.floor(ts.clock.now() / 1000) + 60) })) },
  { name: "htm GET", check: "htm", token: (id) => signClaims(es256, claims(id, { htm: "GET" })) },
  { name: "htm post (lower case)", check: "htm", token: (id) => signClaims(es256, claims(id, { htm: "post" })) },
  { name: "htb_s256 of another body", check: "htb_s256", token: (id) => signClaims(es256, claims(id)), payload: '{"event":"card.found"}' },
  { name: "jti of another event", check: "jti", token: (id) => signClaims(es256, claims(id, { jti: newEventId() })) },
  {
    name: "ES256 signature DER-encoded instead of raw r||s",
    check: "signature",
    token: async (id) => {
      const input = `${b64({ alg: "ES256", kid: "k-es" })}.${b64(claims(id))}`;
      return `${input}.${es256Signature(input, es256, "der")}`;
    },
  },
];

describe("attacks on the webhook JWT", () => {
  it.each(attacks)("$name: 401 naming the check, the event id left unused", ({ token, check, payload }) =>
    counts.check(async () => {
      const eventId = newEventId();
      const answer = await send(await token(eventId), eventId, payload);
      expectRefused(answer, 401, "INVALID_JWT");
      expect(errorInfo(answer.body).metadata?.check).toBe(check);
      // Nothing was recorded: the genuine request with the same event id is accepted, once.
      expectAccepted(await send(await signClaims(es256, claims(eventId)), eventId));
      expectRefused(await send(await signClaims(es256, claims(eventId)), eventId), 409, "DUPLICATE_EVENT");
    }),
  );

  it("a raw r||s ES256 signature made the same way is accepted (the DER case fails for its encoding alone)", () =>
    counts.check(async () => {
      const eventId = newEventId();
      const input = `${b64({ alg: "ES256", kid: "k-es" })}.${b64(claims(eventId))}`;
      expectAccepted(await send(`${input}.${es256Signature(input, es256, "ieee-p1363")}`, eventId));
    }));

  it("no header made the server fetch anything but the listener's JWKS", () => {
    expect([...jwks.hits.keys()].filter((path) => path !== JWKS_PATH)).toEqual([]);
    // An unknown kid refetches the JWKS at most once per cooldown, however many arrive.
    expect(jwks.hits.get(JWKS_PATH)).toBeLessThanOrEqual(2);
  });
});

