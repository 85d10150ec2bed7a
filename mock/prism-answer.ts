// What the mock answers for Prism's answer. Successes pass through unchanged. Refusals become the
// ApiError the server would throw, so that the server's error rendering gives them the contract's
// `Status` body: an error example Prism chose (a documented error, forced with `Prefer: code=`),
// or Prism's own problem+json (a request it refused, a `Prefer` it could not satisfy).
import { ErrorReasonValues } from "../generated/enums.js";
import { ApiError, GrpcCode, invalidField, type ErrorReason, type FieldViolation } from "../src/core/errors.js";
import { toApiError } from "../src/http/to-api-error.js";

interface Detail {
  "@type"?: string;
  reason?: string;
  metadata?: Record<string, string>;
  fieldViolations?: FieldViolation[];
}

/** One entry of Prism's `sl-violations` header. */
interface Violation {
  location?: string[];
  message?: string;
}

const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";
const BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest";

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isKnownReason = (reason: unknown): reason is ErrorReason => (ErrorReasonValues as readonly unknown[]).includes(reason);

/** The headers of a documented error the server sends with it, as Prism made them from the contract (`Retry-After` of a 429 or 503). */
const DOCUMENTED_HEADERS = ["Retry-After"];

/** A contract `Status` body (an error example) as the ApiError it documents; undefined if it is not one. */
function fromStatusBody(status: number, body: unknown, headers: Headers): ApiError | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { code, message, details } = body as { code?: unknown; message?: unknown; details?: unknown };
  if (typeof code !== "number" || typeof message !== "string" || !Array.isArray(details)) return undefined;
  const info = (details as Detail[]).find((d) => d["@type"] === ERROR_INFO);
  if (!isKnownReason(info?.reason)) return undefined;
  const violations = (details as Detail[]).find((d) => d["@type"] === BAD_REQUEST)?.fieldViolations ?? [];
  const documented = Object.fromEntries(DOCUMENTED_HEADERS.flatMap((name) => (headers.has(name) ? [[name, headers.get(name)!]] : [])));
  return new ApiError(status, code, info.reason, message, { violations, metadata: info.metadata ?? {}, headers: documented });
}

/**
 * Prism's refusal of a request, from its `sl-violations` header, in the server's words: the same
 * translation as the server's contract validator (`body.limit.amount: <description>`).
 */
function fromViolations(header: string): ApiError | undefined {
  const violations = parse(header);
  if (!Array.isArray(violations) || violations.length === 0) return undefined;
  const issues = (violations as Violation[]).map((v) => ({ path: (v.location ?? []).filter((part) => part !== "request").join("/"), message: v.message }));
  return toApiError({ status: 400, errors: issues }).error;
}

/** The ApiError for a Prism answer of 400 or more. `preferred`: the request carried a `Prefer` header. */
export function prismRefusal(status: number, headers: Headers, text: string, preferred: boolean): ApiError {
  const body = parse(text);
  const documented = fromStatusBody(status, body, headers);
  if (documented) return documented;
  const violations = headers.get("sl-violations");
  const refused = violations ? fromViolations(violations) : undefined;
  if (refused) return refused;
  const detail = typeof (body as { detail?: unknown })?.detail === "string" ? (body as { detail: string }).detail : `Prism answered ${status}`;
  // Prism's problem+json without violations: a Prefer it cannot satisfy (an undefined code or example) ...
  if (preferred) return invalidField("headers.prefer", detail);
  // ... or a failure of the mock itself.
  return new ApiError(500, GrpcCode.INTERNAL, "INTERNAL", `the mock could not answer: ${detail}`);
}
