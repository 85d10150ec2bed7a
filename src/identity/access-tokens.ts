// Access tokens: short-lived ES256 JWTs issued by the client-credentials grant and checked on every
// API call, together with the credential (a revoked credential's tokens stop working at once) and
// the user's current roles.
import { errors as joseErrors, jwtVerify, SignJWT, decodeProtectedHeader } from "jose";
import type { Clock } from "../core/clock.js";
import { unauthenticated } from "../core/errors.js";
import { base62 } from "../core/ids.js";
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

export class AccessTokens {
  constructor(
    private readonly storage: Storage,
    private readonly keys: SigningKeys,
    private readonly clock: Clock,
    private readonly options: AccessTokenOptions,
  ) {}

  async issue(userId: string, credentialId: string): Promise<{ token: string; expiresIn: number }> {
    const now = Math.floor(this.clock.now() / 1000);
    const token = await new SignJWT({ cid: credentialId })
      .setProtectedHeader({ alg: TOKEN_ALG, kid: this.keys.current.kid, typ: "at+jwt" })
      .setIssuer(this.options.issuer)
      .setAudience(this.options.issuer)
      .setSubject(userId)
      .setIssuedAt(now)
      .setExpirationTime(now + this.options.ttlSeconds)
      .setJti(base62(16))
      .sign(this.keys.current.privateKey);
    return { token, expiresIn: this.options.ttlSeconds };
  }

  /** The principal behind an `Authorization` header value; 401 for anything else. */
  async authenticate(authorization: string | undefined): Promise<Principal> {
    if (!authorization) {
      throw unauthenticated("MISSING_ACCESS_TOKEN", "a bearer access token is required", { headers: { "WWW-Authenticate": "Bearer" } });
    }
    const match = BEARER.exec(authorization);
    if (!match?.[1]) throw rejected("malformed");
    const token = match[1];
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
    const row = await this.storage.db
      .selectFrom("credentials")
      .innerJoin("users", "users.id", "credentials.user_id")
      .select(["credentials.revoked_at", "users.roles"])
      .where("credentials.id", "=", String(payload.cid))
      .where("users.id", "=", String(payload.sub))
      .executeTakeFirst();
    if (!row || row.revoked_at !== null) throw rejected("revoked");
    const roles = (JSON.parse(row.roles) as string[]).filter((r): r is Role => (ROLES as string[]).includes(r));
    return { userId: String(payload.sub), credentialId: String(payload.cid), roles };
  }
}
