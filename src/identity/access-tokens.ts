// Access tokens: short-lived ES256 JWTs issued by the client-credentials grant and checked on every
// API call, together with the credential (a revoked credential's tokens stop working) and the
// user's current roles. Both are kept per token while the principals' change watch trusts them: a
// revocation takes effect at once on the instance that made it, within 1 s on every other.
import { errors as joseErrors, jwtVerify, SignJWT, decodeProtectedHeader } from "jose";
import { BoundedMap } from "../core/bounded-map.js";
import type { Clock } from "../core/clock.js";
import { unauthenticated } from "../core/errors.js";
import { base62 } from "../core/ids.js";
import type { ChangeWatch } from "../storage/change-versions.js";
import type { Storage } from "../storage/connect.js";
import { ROLES, type Principal, type Role } from "./roles.js";
import { TOKEN_ALG, type SigningKeys } from "./signing-keys.js";

export interface AccessTokenOptions {
  issuer: string;
  ttlSeconds: number;
}

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/;

const rejected = (why: string) =>
  unauthenticated("INVALID_ACCESS_TOKEN", `the access token is ${why}`, { headers: { "WWW-Authenticate": 'Bearer error="invalid_token"' } });

/** The token of an `Authorization: Bearer <JWT>` value, before any verification; 401 when missing or not JWT-shaped. */
export function bearerAccessToken(authorization: string | undefined): string {
  if (!authorization) {
    throw unauthenticated("MISSING_ACCESS_TOKEN", "a bearer access token is required", { headers: { "WWW-Authenticate": "Bearer" } });
  }
  const match = BEARER.exec(authorization);
  if (!match?.[1]) throw rejected("malformed");
  return match[1];
}

export class AccessTokens {
  constructor(
    private readonly storage: Storage,
    private readonly keys: SigningKeys,
    private readonly clock: Clock,
    private readonly options: AccessTokenOptions,
    private readonly principals: ChangeWatch,
  ) {}

  async issue(userId: string, credentialId: string): Promise<{ token: string; expiresIn: number }> {
    const key = await this.keys.current();
    const now = Math.floor(this.clock.now() / 1000);
    const token = await new SignJWT({ cid: credentialId })
      .setProtectedHeader({ alg: TOKEN_ALG, kid: key.kid, typ: "at+jwt" })
      .setIssuer(this.options.issuer)
      .setAudience(this.options.issuer)
      .setSubject(userId)
      .setIssuedAt(now)
      .setExpirationTime(now + this.options.ttlSeconds)
      .setJti(base62(16))
      .sign(key.privateKey);
    return { token, expiresIn: this.options.ttlSeconds };
  }

  /**
   * The principal behind an `Authorization` header value; 401 for anything else. `admit` is called
   * with the credential id of a token whose signature holds, before the database is asked about it
   * (the rate limit per credential: a caller over it costs no query).
   */
  async authenticate(authorization: string | undefined, admit?: (credentialId: string) => void): Promise<Principal> {
    const token = bearerAccessToken(authorization);
    const claims = this.verifiedClaims(token) ?? (await this.verify(token));
    admit?.(claims.cid);
    if (claims.principal && this.principals.trusts(claims.principal.generation)) return claims.principal.value;
    // Taken before the read: a change seen by the watch while the query runs makes what it read
    // untrusted at once.
    const generation = this.principals.generation;
    const row = await this.storage.db
      .selectFrom("credentials")
      .innerJoin("users", "users.id", "credentials.user_id")
      .select(["credentials.revoked_at", "credentials.app_ids", "users.roles"])
      .where("credentials.id", "=", claims.cid)
      .where("users.id", "=", claims.sub)
      .executeTakeFirst();
    // A refusal is not kept: it is final (a revocation) or cannot happen to a token this service signed.
    if (!row || row.revoked_at !== null) throw rejected("revoked");
    const roles = (JSON.parse(row.roles) as string[]).filter((r): r is Role => (ROLES as string[]).includes(r));
    const principal: Principal = { userId: claims.sub, credentialId: claims.cid, roles, appIds: JSON.parse(row.app_ids) as string[] };
    claims.principal = { value: principal, generation };
    return principal;
  }

  /**
   * Tokens whose signature and claims were verified, until they expire. The same bytes verify the
   * same way until `exp`, and an ES256 verification is a large share of a small request's CPU. Each
   * also keeps its principal as last read, so the cache of principals is bounded and expires with it.
   */
  private readonly verified = new BoundedMap<string, VerifiedClaims>({ entries: VERIFIED_CACHE_SIZE });

  private verifiedClaims(token: string): VerifiedClaims | undefined {
    const claims = this.verified.get(token);
    if (claims && claims.exp * 1000 <= this.clock.now()) {
      this.verified.delete(token);
      return undefined;
    }
    return claims;
  }

  private async verify(token: string): Promise<VerifiedClaims> {
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw rejected("malformed");
    }
    const key = kid ? await this.keys.publicKey(kid) : undefined;
    if (!key) throw rejected("not signed by this service");
    let payload;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: [TOKEN_ALG],
        issuer: this.options.issuer,
        audience: this.options.issuer,
        requiredClaims: ["exp", "iat", "sub", "cid"],
        currentDate: new Date(this.clock.now()),
      }));
    } catch (e) {
      throw rejected(e instanceof joseErrors.JWTExpired ? "expired" : "invalid");
    }
    const claims: VerifiedClaims = { sub: String(payload.sub), cid: String(payload.cid), exp: Number(payload.exp) };
    this.verified.set(token, claims);
    return claims;
  }
}

interface VerifiedClaims {
  sub: string;
  cid: string;
  /** Seconds since the epoch. */
  exp: number;
  /** As read from the database at a generation of the principals' change watch. */
  principal?: { value: Principal; generation: number };
}

const VERIFIED_CACHE_SIZE = 10_000;
