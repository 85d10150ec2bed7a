// The OAuth 2.0 client-credentials grant (RFC 6749 4.4) with client_secret_post. Unknown client,
// wrong secret and revoked credential answer the same invalid_client, in comparable time, and are
// throttled per client id and source address.
import { invalidArgument, invalidField, tooManyRequests, unauthenticated } from "../core/errors.js";
import type { Origin } from "../core/origin.js";
import type { CredentialsTable } from "../storage/schema.js";
import type { AccessTokens } from "./access-tokens.js";
import type { Credentials } from "./credentials.js";
import type { FailureThrottle } from "./failure-throttle.js";
import { DECOY_HASH_PROMISE, verifySecret } from "./secret-hash.js";

export interface TokenRequest {
  grant_type: string;
  client_id: string;
  client_secret: string;
  scope?: string;
}

export interface TokenAnswer {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
}

/** The checks of a token request that need no state: the grant type and the (empty) scope. */
export function checkGrantRequest(request: Pick<TokenRequest, "grant_type" | "scope">): void {
  if (request.grant_type !== "client_credentials") throw invalidField("body.grant_type", "must be client_credentials", "UNSUPPORTED_GRANT_TYPE");
  if (request.scope) throw invalidArgument("INVALID_SCOPE", "no scopes are defined; omit scope or send it empty");
}

export class ClientCredentialsGrant {
  constructor(
    private readonly credentials: Credentials,
    private readonly tokens: AccessTokens,
    private readonly throttle: FailureThrottle,
  ) {}

  /** `source` is the caller's address (behind trusted proxies, the client's); `origin`, the request. */
  async exchange(request: TokenRequest, source: string, origin?: Origin): Promise<TokenAnswer> {
    checkGrantRequest(request);
    const admission = await this.throttle.admit(JSON.stringify([request.client_id, source]), origin);
    if ("retryAfter" in admission) {
      const message = admission.undecided ? "too many attempts for this client at once; retry later" : "too many failed attempts for this client; retry later";
      throw tooManyRequests("TOO_MANY_FAILED_ATTEMPTS", message, admission.retryAfter);
    }
    const { attempt } = admission;
    let row: CredentialsTable | undefined;
    try {
      row = await this.authenticate(request);
    } catch (e) {
      // Not decided, and answered with nothing but the error: its place is freed (else it lapses).
      await attempt.abandoned(origin).catch(() => undefined);
      throw e;
    }
    // Decided in the database before the answer: no answer tells what the throttle has not counted.
    if (!row) {
      await attempt.failed(origin);
      throw unauthenticated("INVALID_CLIENT", "client authentication failed");
    }
    await attempt.succeeded(origin);
    await this.credentials.markUsed(row.id);
    const { token, expiresIn } = await this.tokens.issue(row.user_id, row.id);
    return { access_token: token, token_type: "Bearer", expires_in: expiresIn };
  }

  /** The credential `request` authenticates, or undefined: unknown, wrong secret or revoked, alike and in comparable time. */
  private async authenticate(request: TokenRequest): Promise<CredentialsTable | undefined> {
    const row = await this.credentials.findByClientId(request.client_id);
    const valid = await verifySecret(request.client_secret, row?.secret_hash ?? (await DECOY_HASH_PROMISE));
    return row && valid && row.revoked_at === null ? row : undefined;
  }
}
