// Maps whatever a request failed with to an ApiError: our own errors pass through; the body
// parser's and the OpenAPI validator's are translated; the database unavailable for the moment is
// 503; anything else is an internal error whose details stay in the log, never in the answer.
import { ApiError, GrpcCode, type FieldViolation } from "../core/errors.js";
import { unsupportedBodyEncoding } from "../core/json-body.js";
import { databaseUnavailable } from "../storage/unavailable.js";
import type { ValidatorIssue } from "./one-of-issues.js";

const isObject = (e: unknown): e is Record<string, unknown> => typeof e === "object" && e !== null;

/** `.body.limit.amount` or `/body/limit/amount` to `body.limit.amount`. */
function fieldPath(path: string | undefined): string {
  return (path ?? "").replace(/^[./]+/, "").replaceAll("/", ".") || "request";
}

/** 413 for a body over the operation's limit (`headers`: Connection: close where the body is left unread). */
export const payloadTooLarge = (headers?: Record<string, string>): ApiError =>
  new ApiError(413, GrpcCode.INVALID_ARGUMENT, "PAYLOAD_TOO_LARGE", "the request body exceeds the limit", { headers });

function validatorError(status: number, issues: ValidatorIssue[], fallback: string): ApiError {
  const violations: FieldViolation[] = issues.map((i) => ({ field: fieldPath(i.path), description: i.message ?? "is invalid" }));
  const message = violations.map((v) => `${v.field}: ${v.description}`).join("; ") || fallback;
  switch (status) {
    case 400:
      return new ApiError(400, GrpcCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", message, { violations });
    case 404:
      return new ApiError(404, GrpcCode.NOT_FOUND, "ROUTE_NOT_FOUND", "no such route");
    case 405:
      return new ApiError(405, GrpcCode.UNIMPLEMENTED, "METHOD_NOT_ALLOWED", "the route does not accept this method");
    case 413:
      return payloadTooLarge();
    case 415:
      return new ApiError(415, GrpcCode.INVALID_ARGUMENT, "UNSUPPORTED_MEDIA_TYPE", "unsupported Content-Type for this operation");
    default:
      return new ApiError(status, GrpcCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", message);
  }
}

export const malformedPath = () => new ApiError(400, GrpcCode.INVALID_ARGUMENT, "MALFORMED_PATH", "a path parameter is not valid percent-encoded UTF-8");

/** Whether body-parser's refusal is of valid JSON that is not an object or array (`null`, `5`, `"x"`): it parses only those. */
function isJsonScalar(body: unknown): boolean {
  if (typeof body !== "string") return false;
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}

/** Seconds a client is told to wait when the database is unavailable: contention and reconnection pass in about that. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

export const unavailable = (retryAfterSeconds = UNAVAILABLE_RETRY_AFTER_SECONDS) =>
  new ApiError(503, GrpcCode.UNAVAILABLE, "UNAVAILABLE", "the service is temporarily unavailable; retry after the time in Retry-After", {
    headers: { "Retry-After": String(retryAfterSeconds) },
  });

export interface Translated {
  error: ApiError;
  /** A fault of the server, to be logged with its stack. */
  internal: boolean;
  /** The database unavailable for the moment: the cause's label for a warning (never its message). */
  unavailable?: string;
}

export function toApiError(error: unknown): Translated {
  if (error instanceof ApiError) return { error, internal: false };
  // The router's percent-decoding of a path parameter (`%ff`): its message would echo the value.
  if (error instanceof URIError && (error as URIError & { status?: number }).status === 400) return { error: malformedPath(), internal: false };
  if (isObject(error)) {
    // body-parser (express.json / express.urlencoded)
    if (error.type === "entity.too.large") return { error: validatorError(413, [], ""), internal: false };
    // A form (the token endpoint's) past express.urlencoded's parameterLimit: the client's fault, not a 500.
    if (error.type === "parameters.too.many") {
      return { error: new ApiError(400, GrpcCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", "the form body has too many parameters"), internal: false };
    }
    if (error.type === "entity.parse.failed") {
      // Every JSON body of the contract is an object: a scalar is refused in the validator's words for `[]`.
      if (isJsonScalar(error.body)) return { error: validatorError(400, [{ path: "body", message: "must be object" }], ""), internal: false };
      return { error: new ApiError(400, GrpcCode.INVALID_ARGUMENT, "MALFORMED_BODY", "the request body is not valid JSON"), internal: false };
    }
    if (typeof error.type === "string" && error.type.startsWith("encoding.") || error.type === "charset.unsupported") {
      return { error: unsupportedBodyEncoding(), internal: false };
    }
    // raw-body and other http-errors with a status meant for the client (aborted, length mismatch),
    // and a body that can no longer be read: the client went away before it was.
    if ((error.expose === true && typeof error.type === "string" && error.status === 400) || error.type === "stream.not.readable") {
      return { error: new ApiError(400, GrpcCode.INVALID_ARGUMENT, "MALFORMED_BODY", "the request body could not be read"), internal: false };
    }
    // express-openapi-validator: HttpError subclasses carry status and errors[]
    const status = typeof error.status === "number" ? error.status : undefined;
    // Its own percent-decoding of path parameters, whose message would echo the path.
    if (status === 400 && Array.isArray(error.errors) && (error.errors as ValidatorIssue[]).some((i) => i.message?.startsWith("malformed uri"))) {
      return { error: malformedPath(), internal: false };
    }
    if (status !== undefined && status >= 400 && status < 500 && Array.isArray(error.errors)) {
      return { error: validatorError(status, error.errors as ValidatorIssue[], String(error.message ?? "invalid request")), internal: false };
    }
  }
  const cause = databaseUnavailable(error);
  if (cause !== undefined) return { error: unavailable(), internal: false, unavailable: cause };
  return {
    error: new ApiError(500, GrpcCode.INTERNAL, "INTERNAL", "internal error; quote the request id when reporting it"),
    internal: true,
  };
}
