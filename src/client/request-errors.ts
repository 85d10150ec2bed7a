// What a failed call looks like to a caller: every non-2xx answer of the API is the `Status` body,
// whose ErrorInfo carries the stable `reason` and whose RequestInfo the request id to quote to
// support. The body is read defensively: a proxy in between may answer with anything.
import type { ErrorReason } from "../../generated/enums.js";

const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";
const REQUEST_INFO = "type.googleapis.com/google.rpc.RequestInfo";

function detail(body: unknown, type: string, field: string): string | undefined {
  const details = (body as { details?: unknown } | null | undefined)?.details;
  if (!Array.isArray(details)) return undefined;
  for (const d of details as unknown[]) {
    const entry = d as Record<string, unknown> | null;
    if (entry?.["@type"] === type && typeof entry[field] === "string") return entry[field];
  }
  return undefined;
}

/** The stable `reason` of a `Status` body (its ErrorInfo detail), if the body is one: a known reason, or one added since. */
export const errorReason = (body: unknown): ErrorReason | undefined => detail(body, ERROR_INFO, "reason");

/** The request id of a failed answer: the body's RequestInfo, else the `X-Request-Id` header. */
export const errorRequestId = (body: unknown, response: Response): string | undefined => detail(body, REQUEST_INFO, "requestId") ?? response.headers.get("x-request-id") ?? undefined;

/** A non-2xx answer of the API. `message` reads like `404 AUTOMATION_NOT_FOUND: no automation with id … (request id …)`. */
export class ApiRequestError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /**
   * The ErrorInfo reason (e.g. `ROLE_NOT_ALLOWED`): what to branch on. One of `ErrorReasonValues`, or a
   * reason added since (handle it by `status`). Undefined when the body is not a `Status`.
   */
  readonly reason: ErrorReason | undefined;
  /** The request id, to quote when asking for support. */
  readonly requestId: string | undefined;
  /** The answer's body as received: the `Status` body (`components["schemas"]["Status"]`), or whatever a proxy sent. */
  readonly body: unknown;

  constructor(response: Response, body: unknown) {
    const reason = errorReason(body);
    const requestId = errorRequestId(body, response);
    const text = (body as { message?: unknown } | null | undefined)?.message;
    super(`${response.status}${reason ? ` ${reason}` : ""}: ${typeof text === "string" ? text : "request failed"}${requestId ? ` (request id ${requestId})` : ""}`);
    this.name = "ApiRequestError";
    this.status = response.status;
    this.reason = reason;
    this.requestId = requestId;
    this.body = body;
  }
}

/** The body of a successful openapi-fetch answer; otherwise throws an ApiRequestError. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data !== undefined && result.response.ok) return result.data;
  throw new ApiRequestError(result.response, result.error);
}
