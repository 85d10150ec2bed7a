// The console's session: a typed client (src/client, on the generated types) holding the client
// credentials and its access token in memory only (no storage, no cookie: closing or reloading the
// page signs out), and what the caller may do, learned by asking the API.
import { createApiClient, TokenError, type ApiClient, type components } from "../../src/client/index.js";

export type Schemas = components["schemas"];

export interface Session {
  client: ApiClient;
  clientId: string;
  /** What the caller's role lets it do (the API answers 403 otherwise). */
  can: { automations: boolean; subjectLimits: boolean };
  /** The fund policy's currency: every amount the console sends is in it. */
  currencyCode: string;
}

/** An answer of the API that was not a success, with the contract's error body. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: Schemas["Status"] | undefined,
  ) {
    super(describeStatus(status, body));
    this.name = "ApiFailure";
  }
}

function describeStatus(status: number, body: Schemas["Status"] | undefined): string {
  if (!body || typeof body.message !== "string") return `The server answered ${status}.`;
  const info = body.details?.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo") as Schemas["ErrorInfo"] | undefined;
  return `${body.message}${info?.reason ? ` (${info.reason}, ${status})` : ` (${status})`}`;
}

/** The body of a successful answer; otherwise throws an ApiFailure whose message says what went wrong. */
export async function call<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await request;
  if (response.ok && data !== undefined) return data;
  throw new ApiFailure(response.status, error as Schemas["Status"] | undefined);
}

/** A sentence for any failure, for the place next to what caused it. */
export function describeError(error: unknown): string {
  if (error instanceof ApiFailure) return error.message;
  if (error instanceof TokenError) {
    return error.status === 401 || error.error === "invalid_client" ? "Sign-in refused: unknown client id or wrong secret." : `Sign-in failed: ${error.message}.`;
  }
  if (error instanceof TypeError) return "The server could not be reached.";
  return error instanceof Error ? error.message : String(error);
}

async function allowed(request: Promise<{ response: Response }>): Promise<boolean> {
  const { response } = await request;
  if (response.status === 403) return false;
  if (!response.ok) throw new ApiFailure(response.status, undefined);
  return true;
}

/** Signs in with client credentials against this server; throws when the credentials are refused. */
export async function signIn(clientId: string, clientSecret: string): Promise<Session> {
  const client = createApiClient({ baseUrl: window.location.origin, credentials: { clientId, clientSecret } });
  // Every role may read the policy: this also obtains the first token, so bad credentials fail here.
  const { fundPolicy } = await call(client.GET("/api/v1/funds/policy"));
  const [automations, subjectLimits] = await Promise.all([
    allowed(client.GET("/api/v1/automations", { params: { query: { page_size: 10 } } })),
    allowed(client.POST("/api/v1/funds/subject-app-limits/search", { body: { pageSize: 10 } })),
  ]);
  return { client, clientId, can: { automations, subjectLimits }, currencyCode: fundPolicy.currencyCode };
}
