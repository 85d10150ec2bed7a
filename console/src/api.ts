// The console's session: a typed client (src/client, on the generated types) holding the client
// credentials and its access token in memory only (no storage, no cookie: closing or reloading the
// page signs out), and what the caller may do, learned by asking the API.
import { ApiRequestError, createApiClient, TokenError, unwrap, type ApiClient, type components } from "../../src/client/index.js";
import { userNames, type UserNames } from "./users.js";
import { fieldWords } from "./words.js";

export type Schemas = components["schemas"];

export interface Session {
  client: ApiClient;
  clientId: string;
  /** What the caller's role lets it do (the API answers 403 otherwise). */
  can: { automations: boolean; subjectLimits: boolean; myLimits: boolean; audit: boolean; destinations: boolean; users: boolean };
  /** The fund policy's currency: every amount the console sends is in it. */
  currencyCode: string;
  /** Users' display names, for every place a user id is shown. */
  names: UserNames;
}

/** The body of a successful answer; otherwise throws the client's ApiRequestError (status, reason, body). */
export async function call<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  return unwrap(await request);
}

/** A sentence for any failure, for the place next to what caused it. */
export function describeError(error: unknown): string {
  // A TokenError is an ApiRequestError too: sign-in failures get their own words.
  if (error instanceof TokenError) {
    return error.status === 401 || error.error === "invalid_client" ? "Sign-in refused: unknown client id or wrong secret." : `Sign-in failed: ${error.message}.`;
  }
  if (error instanceof ApiRequestError) {
    const body = error.body as { message?: unknown; details?: { fieldViolations?: { field: string; description: string }[] }[] } | undefined;
    if (typeof body?.message !== "string") return `The server answered ${error.status}.`;
    // The fields at fault named as the forms label them, not by their path in the request.
    const violations = body.details?.flatMap((d) => d.fieldViolations ?? []) ?? [];
    const message = violations.length ? violations.map((v) => `${fieldWords(v.field)}: ${v.description}`).join("; ") : body.message;
    return `${message} (${error.reason ? `${error.reason}, ` : ""}${error.status})`;
  }
  if (error instanceof TypeError) return "The server could not be reached.";
  return error instanceof Error ? error.message : String(error);
}

async function allowed(request: Promise<{ response: Response }>): Promise<boolean> {
  const { response } = await request;
  if (response.status === 403) return false;
  if (!response.ok) throw new ApiRequestError(response, undefined);
  return true;
}

/** Signs in with client credentials against this server; throws when the credentials are refused. */
export async function signIn(clientId: string, clientSecret: string): Promise<Session> {
  const client = createApiClient({ baseUrl: window.location.origin, credentials: { clientId, clientSecret } });
  // Every role may read the policy: this also obtains the first token, so bad credentials fail here.
  const { fundPolicy } = await call(client.GET("/api/v1/funds/policy"));
  const [automations, subjectLimits, myLimits, audit, destinations, users] = await Promise.all([
    allowed(client.GET("/api/v1/automations", { params: { query: { page_size: 10 } } })),
    allowed(client.POST("/api/v1/funds/subject-app-limits/search", { body: { pageSize: 10 } })),
    // An app's backend (ROLE_APP_SERVICE) has no fund of its own.
    allowed(client.GET("/api/v1/funds/my/app-limits", { params: { query: { page_size: 10 } } })),
    allowed(client.GET("/api/v1/audit-events", { params: { query: { page_size: 10 } } })),
    allowed(client.GET("/api/v1/notification-destinations", { params: { query: { page_size: 10 } } })),
    userNames(client),
  ]);
  return { client, clientId, can: { automations, subjectLimits, myLimits, audit, destinations, users: users.readable }, currencyCode: fundPolicy.currencyCode, names: users };
}
