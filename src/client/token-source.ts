// Access tokens by the OAuth 2.0 client-credentials grant, as the token endpoint requires them
// asked for (credentials in the form body, client_secret_post): one token is cached and shared by
// concurrent callers, and a new one is asked for shortly before it expires.
import createClient from "openapi-fetch";
import type { paths } from "../../generated/api.js";
import { ApiRequestError } from "./request-errors.js";

export const TOKEN_PATH = "/auth/v1/token";

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

export interface TokenSourceOptions {
  /** The tenant base URL, e.g. http://localhost:8080. */
  baseUrl: string;
  credentials: ClientCredentials;
  fetch?: typeof globalThis.fetch;
  /** Ask for a new token this many seconds before the current one expires (default 30). */
  refreshSkewSeconds?: number;
}

export interface TokenSource {
  /** A valid access token: the cached one, or a new one (one request however many callers wait). */
  token(): Promise<string>;
  /** Drops the cached token, e.g. after the server answered 401 to it; the next `token()` asks again. */
  forget(): void;
}

/** The token endpoint refused: `error` is the OAuth error code (`invalid_client`, …), `reason` its UPPER_SNAKE_CASE form. */
export class TokenError extends ApiRequestError {
  readonly error: string | undefined;

  constructor(response: Response, body: unknown) {
    super(response, body);
    this.name = "TokenError";
    const error = (body as { error?: unknown } | null | undefined)?.error;
    this.error = typeof error === "string" ? error : undefined;
  }
}

/** Obtains, caches and refreshes access tokens for one API client credential. Throws TokenError when refused. */
export function createTokenSource(options: TokenSourceOptions): TokenSource {
  const client = createClient<paths>({ baseUrl: options.baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}) });
  const skewSeconds = options.refreshSkewSeconds ?? 30;
  const { clientId, clientSecret } = options.credentials;
  let cached: { token: string; refreshAt: number } | undefined;
  let pending: Promise<string> | undefined;
  const fetchToken = async (): Promise<string> => {
    const { data, error, response } = await client.POST(TOKEN_PATH, {
      body: { grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret },
      bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    if (!data) throw new TokenError(response, error);
    cached = { token: data.access_token, refreshAt: Date.now() + Math.max(0, data.expires_in - skewSeconds) * 1000 };
    return data.access_token;
  };
  return {
    async token() {
      if (cached && Date.now() < cached.refreshAt) return cached.token;
      pending ??= fetchToken().finally(() => (pending = undefined));
      return pending;
    },
    forget() {
      cached = undefined;
    },
  };
}
