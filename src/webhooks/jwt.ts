// JWT authentication of an inbound webhook (seed 5.2): `Authorization: Bearer <JWT>` signed RS256,
// ES256 or EdDSA by a key of the listener's JWKS named by the header `kid`, with every required
// claim checked: sub, aud, exp (in the future, at most 10 minutes ahead), jti, htm, htb_s256.
// Every failure is a 401 whose message and `check` metadata name the failed check; the token is
// never echoed.
import { decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import type { Clock } from "../core/clock.js";
import { ApiError, unauthenticated } from "../core/errors.js";
import { htbS256 } from "./body.js";
import { constantTimeEqual } from "./constant-time.js";
import type { JwksCache } from "./jwks-cache.js";

/** Seed 5.2: RS256, ES256, EdDSA, nothing else (no `none`, no HMAC algorithms). */
export const WEBHOOK_JWT_ALGORITHMS = ["RS256", "ES256", "EdDSA"] as const;
/** Seed 8: exp within 10 minutes of the current time. */
export const MAX_JWT_LIFETIME_SECONDS = 600;
export const MAX_JWT_LENGTH = 8192;
export const REQUIRED_CLAIMS = ["sub", "aud", "exp", "jti", "htm", "htb_s256"] as const;

export interface VerifyWebhookJwtInput {
  /** The `Authorization` header value. */
  authorization: string | undefined;
  /** The listener's JWKS URL. */
  jwksUrl: string;
  cache: JwksCache;
  /** The tenant base URL: the required `sub`. */
  baseUrl: string;
  /** The listener's complete URL: the required `aud`. */
  listenerUrl: string;
  /** `Webhook-Event-Id` (any case): the required `jti`. */
  eventId: string;
  rawBody: Uint8Array;
  clock: Clock;
}

export interface WebhookJwtClaims extends JWTPayload {
  sub: string;
  aud: string | string[];
  exp: number;
  jti: string;
  htm: "POST";
  htb_s256: string;
}

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function rejected(check: string, message: string): ApiError {
  return unauthenticated("INVALID_JWT", message, {
    metadata: { check },
    headers: { "WWW-Authenticate": 'Bearer error="invalid_token"' },
  });
}

/** What jose threw, as a 401 naming the check (jose's messages are not passed through). */
function fromJose(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof joseErrors.JWTExpired) return rejected("exp", "the JWT has expired (exp)");
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    const claim = error.claim;
    return error.reason === "missing"
      ? rejected(claim, `the JWT lacks the required claim ${claim}`)
      : rejected(claim, `the JWT claim ${claim} is invalid`);
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return rejected("signature", "the JWT signature does not verify");
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return rejected("alg", `the JWT alg must be one of ${WEBHOOK_JWT_ALGORITHMS.join(", ")}`);
  if (error instanceof joseErrors.JWKSNoMatchingKey) return rejected("kid", "the JWKS key named by kid cannot verify this JWT's alg");
  if (error instanceof joseErrors.JWKSInvalid || error instanceof joseErrors.JWKInvalid) return rejected("kid", "the JWKS key named by kid is invalid");
  if (error instanceof joseErrors.JWTInvalid || error instanceof joseErrors.JWSInvalid) return rejected("format", "the JWT is malformed");
  if (error instanceof joseErrors.JOSENotSupported) return rejected("format", "the JWT uses an unsupported feature");
  // Whatever else (a key jose cannot import, say): still an authentication failure, never a 500.
  return rejected("signature", "the JWT could not be verified");
}

/** The token of `Authorization: Bearer <JWT>`; 401 when missing or not a compact JWS. */
export function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization.trim() === "") {
    throw unauthenticated("MISSING_AUTHORIZATION", "the Authorization header with a Bearer JWT is required", {
      headers: { "WWW-Authenticate": "Bearer" },
    });
  }
  const space = authorization.indexOf(" ");
  const scheme = space < 0 ? authorization : authorization.slice(0, space);
  if (scheme.toLowerCase() !== "bearer") return fail("scheme", "the Authorization header must use the Bearer scheme");
  const token = authorization.slice(space + 1).trim();
  if (token.length > MAX_JWT_LENGTH) return fail("format", `the JWT is longer than ${MAX_JWT_LENGTH} characters`);
  if (!COMPACT_JWS.test(token)) return fail("format", "the Bearer token is not a compact JWS");
  return token;
}

function fail(check: string, message: string): never {
  throw rejected(check, message);
}

/**
 * Verifies the webhook JWT and returns its claims. Order: header (alg, kid), key from the JWKS
 * (401 JWKS_UNAVAILABLE when the JWKS cannot be fetched), signature, then every claim.
 */
export async function verifyWebhookJwt(input: VerifyWebhookJwtInput): Promise<WebhookJwtClaims> {
  const token = bearerToken(input.authorization);

  let header;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return fail("format", "the JWT header is malformed");
  }
  if (typeof header.alg !== "string" || !(WEBHOOK_JWT_ALGORITHMS as readonly string[]).includes(header.alg)) {
    return fail("alg", `the JWT alg must be one of ${WEBHOOK_JWT_ALGORITHMS.join(", ")}`);
  }
  if (typeof header.kid !== "string" || header.kid === "") return fail("kid", "the JWT header kid is required");

  const keySet = await input.cache.keySetFor(input.jwksUrl, header.kid);

  const nowMs = input.clock.now();
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, keySet.getKey, {
      algorithms: [...WEBHOOK_JWT_ALGORITHMS],
      requiredClaims: [...REQUIRED_CLAIMS],
      currentDate: new Date(nowMs),
      clockTolerance: 0,
    }));
  } catch (e) {
    throw fromJose(e);
  }

  // jose has checked the signature, the presence of every required claim, that exp is a number
  // in the future, and nbf if present. The rest is checked here, in the claims table's order.
  const now = Math.floor(nowMs / 1000);
  if (payload.sub !== input.baseUrl) fail("sub", "the JWT claim sub must be the tenant base URL");
  const aud = payload.aud;
  const audOk = aud === input.listenerUrl || (Array.isArray(aud) && aud.length === 1 && aud[0] === input.listenerUrl);
  if (!audOk) fail("aud", "the JWT claim aud must be the webhook's full URL");
  const exp = payload.exp;
  if (typeof exp !== "number" || exp <= now) fail("exp", "the JWT has expired (exp)");
  if (exp - now > MAX_JWT_LIFETIME_SECONDS) fail("exp", `the JWT claim exp must be at most ${MAX_JWT_LIFETIME_SECONDS} s ahead`);
  if (typeof payload.jti !== "string" || payload.jti.toLowerCase() !== input.eventId.toLowerCase()) {
    fail("jti", "the JWT claim jti must equal the Webhook-Event-Id header");
  }
  if (payload.htm !== "POST") fail("htm", "the JWT claim htm must be POST");
  const htb = payload.htb_s256;
  if (typeof htb !== "string" || !constantTimeEqual(htb, htbS256(input.rawBody))) {
    fail("htb_s256", "the JWT claim htb_s256 does not match the request body");
  }
  return payload as WebhookJwtClaims;
}
