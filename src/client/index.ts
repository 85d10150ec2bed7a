// A small typed client for this API, built on openapi-fetch and the generated types. It obtains
// access tokens by the client-credentials grant (credentials in the form body, as the token
// endpoint requires), refreshes them before they expire, and walks any list with an async iterator.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { paths } from "../../generated/api.js";

export type { paths, components, operations } from "../../generated/api.js";
export type ApiClient = Client<paths>;

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

export interface ApiClientOptions {
  /** The tenant base URL, e.g. http://localhost:8080. */
  baseUrl: string;
  /** Without credentials, requests carry no token (the token endpoint and the webhook intake need none). */
  credentials?: ClientCredentials;
  fetch?: typeof globalThis.fetch;
  /** Refresh this many seconds before the token expires. */
  refreshSkewSeconds?: number;
}

const TOKEN_PATH = "/auth/v1/token";
const UNAUTHENTICATED_PATHS = [TOKEN_PATH, "/api/v1/webhooks/incoming/"];

export class TokenError extends Error {
  constructor(
    readonly status: number,
    readonly error: string | undefined,
  ) {
    super(`token request failed with ${status}${error ? ` (${error})` : ""}`);
    this.name = "TokenError";
  }
}

/** Fetches and caches access tokens for one client. */
function tokenSource(client: ApiClient, credentials: ClientCredentials, skewSeconds: number) {
  let cached: { token: string; refreshAt: number } | undefined;
  let pending: Promise<string> | undefined;
  const fetchToken = async (): Promise<string> => {
    const { data, error, response } = await client.POST(TOKEN_PATH, {
      body: { grant_type: "client_credentials", client_id: credentials.clientId, client_secret: credentials.clientSecret },
      bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    if (!data) throw new TokenError(response.status, (error as { error?: string } | undefined)?.error);
    cached = { token: data.access_token, refreshAt: Date.now() + Math.max(0, data.expires_in - skewSeconds) * 1000 };
    return data.access_token;
  };
  return {
    async token(): Promise<string> {
      if (cached && Date.now() < cached.refreshAt) return cached.token;
      pending ??= fetchToken().finally(() => (pending = undefined));
      return pending;
    },
    forget(): void {
      cached = undefined;
    },
  };
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const client = createClient<paths>({ baseUrl: options.baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}) });
  if (!options.credentials) return client;
  const tokens = tokenSource(createClient<paths>({ baseUrl: options.baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}) }), options.credentials, options.refreshSkewSeconds ?? 30);
  const doFetch = options.fetch ?? globalThis.fetch;
  const retryable = new WeakMap<Request, Request>();
  const auth: Middleware = {
    async onRequest({ request, schemaPath }) {
      if (UNAUTHENTICATED_PATHS.some((p) => schemaPath.startsWith(p))) return undefined;
      request.headers.set("Authorization", `Bearer ${await tokens.token()}`);
      retryable.set(request, request.clone());
      return request;
    },
    async onResponse({ request, response }) {
      const copy = retryable.get(request);
      if (response.status !== 401 || !copy) return undefined;
      // The server no longer accepts the cached token (expired early, key rotated): retry once with a fresh one.
      tokens.forget();
      copy.headers.set("Authorization", `Bearer ${await tokens.token()}`);
      return doFetch(copy);
    },
  };
  client.use(auth);
  return client;
}

interface ListPage<T> {
  list: T[];
  nextPageToken: string;
}

/**
 * Walks every page of a list: `fetchPage` gets the page token to send ("" for the first page) and
 * answers the list response. Stops at the empty `nextPageToken` that marks the end.
 */
export async function* paginate<T>(fetchPage: (pageToken: string) => Promise<ListPage<T>>): AsyncGenerator<T> {
  let token = "";
  do {
    const page = await fetchPage(token);
    yield* page.list;
    token = page.nextPageToken;
  } while (token !== "");
}

/** The body of a successful openapi-fetch answer, or an Error carrying the contract's error body. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data !== undefined && result.response.ok) return result.data;
  const body = result.error as { message?: string } | undefined;
  throw Object.assign(new Error(`${result.response.status}: ${body?.message ?? "request failed"}`), { status: result.response.status, body: result.error });
}
