// A small typed client for this API, built on openapi-fetch and the generated types: requests carry
// an access token obtained by the client-credentials grant (see token-source.ts), `paginate` walks
// any list, and `unwrap` turns a failed answer into an ApiRequestError; `verifyNotification` checks a
// notify step's notification; with `retry`, calls are tried again when that is safe (retry-policy.ts).
// Browser-safe (the console uses it); `npm run pack:client` makes it the package @tenant/access-api-client.
import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "../../generated/api.js";
import type { Client } from "./fetch-types.js";
import { idempotencyKeys } from "./idempotency-keys.js";
import type { RetryOptions } from "./retry-policy.js";
import { retryingFetch } from "./retrying-fetch.js";
import { createTokenSource, TOKEN_PATH, type ClientCredentials } from "./token-source.js";

export type { paths, components, operations, webhooks } from "../../generated/api.js";
export * from "../../generated/enums.js";
export { ApiRequestError, errorReason, unwrap } from "./request-errors.js";
export { createTokenSource, TokenError, type ClientCredentials, type TokenSource, type TokenSourceOptions } from "./token-source.js";
export { NotificationVerificationError, type NotificationVerificationReason } from "./notification-errors.js";
export type { RetryOptions } from "./retry-policy.js";
export { DEFAULT_TOLERANCE_SECONDS, verifyNotification, type NotificationHeaders, type VerifyNotificationOptions } from "./verify-notification.js";

/** The answers' and bodies' extensible enumerations are their known values or any other string (see fetch-types.ts). */
export type ApiClient = Client<paths>;

export interface ApiClientOptions {
  /** The tenant base URL, e.g. http://localhost:8080. */
  baseUrl: string;
  /** Without credentials, requests carry no token (the token endpoint and the webhook intake need none). */
  credentials?: ClientCredentials;
  fetch?: typeof globalThis.fetch;
  /** Refresh this many seconds before the token expires (default 30). */
  refreshSkewSeconds?: number;
  /** Try a call again after a connection error, 408, 429 or 503, where that is safe (`{}`: the defaults). Without it, no call is retried. */
  retry?: RetryOptions;
}

const UNAUTHENTICATED_PATHS = [TOKEN_PATH, "/api/v1/webhooks/incoming/"];

export function createApiClient(options: ApiClientOptions): ApiClient {
  const fetchOption = options.fetch ? { fetch: options.fetch } : {};
  const doFetch = options.retry ? retryingFetch(options.fetch ?? globalThis.fetch, options.retry) : (options.fetch ?? globalThis.fetch);
  // The same object: only its type differs from openapi-fetch's, by the fixed Readable and Writable.
  const client = createClient<paths>({ baseUrl: options.baseUrl, ...(options.retry ? { fetch: doFetch } : fetchOption) }) as ApiClient;
  if (options.retry?.generateIdempotencyKeys) client.use(idempotencyKeys);
  if (!options.credentials) return client;
  // Token requests are not retried: the grant is a POST without a key, and a refused token must surface at once.
  const tokens = createTokenSource({
    baseUrl: options.baseUrl,
    credentials: options.credentials,
    ...fetchOption,
    ...(options.refreshSkewSeconds === undefined ? {} : { refreshSkewSeconds: options.refreshSkewSeconds }),
  });
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
