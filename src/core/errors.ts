// The one error type of the domain and HTTP layers. It carries what the contract's `Status` body
// needs (HTTP status, gRPC code, stable reason, field violations) and nothing else: messages are
// written for developers and must never include secrets, tokens or stack traces.
import type { KnownErrorReason } from "../../generated/enums.js";

/** A reason the contract enumerates (ErrorReason): a reason it does not list fails the typecheck. */
export type ErrorReason = KnownErrorReason;

export interface FieldViolation {
  /** Dotted path of the field in the request, e.g. `body.limit.amount.money.units`. */
  field: string;
  description: string;
}

/** gRPC canonical codes used by `Status.code`. */
export const GrpcCode = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export interface ApiErrorOptions {
  violations?: FieldViolation[];
  metadata?: Record<string, string>;
  /** Extra response headers, e.g. Retry-After or WWW-Authenticate. */
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly violations: FieldViolation[];
  readonly metadata: Record<string, string>;
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    readonly code: number,
    readonly reason: ErrorReason,
    message: string,
    options: ApiErrorOptions = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.violations = options.violations ?? [];
    this.metadata = options.metadata ?? {};
    this.headers = options.headers ?? {};
  }
}

export const invalidArgument = (reason: ErrorReason, message: string, options?: ApiErrorOptions) =>
  new ApiError(400, GrpcCode.INVALID_ARGUMENT, reason, message, options);

/** A 400 for one field: the common case of a rule broken by one value. */
export const invalidField = (field: string, description: string, reason: ErrorReason = "INVALID_ARGUMENT") =>
  invalidArgument(reason, `${field}: ${description}`, { violations: [{ field, description }], metadata: { field } });

export const unauthenticated = (reason: ErrorReason, message: string, options?: ApiErrorOptions) =>
  new ApiError(401, GrpcCode.UNAUTHENTICATED, reason, message, options);

export const permissionDenied = (reason: ErrorReason, message: string, options?: ApiErrorOptions) =>
  new ApiError(403, GrpcCode.PERMISSION_DENIED, reason, message, options);

export const notFound = (reason: ErrorReason, message: string, options?: ApiErrorOptions) =>
  new ApiError(404, GrpcCode.NOT_FOUND, reason, message, options);

export const conflict = (reason: ErrorReason, message: string, options?: ApiErrorOptions) =>
  new ApiError(409, GrpcCode.ALREADY_EXISTS, reason, message, options);

export const failedPrecondition = (reason: ErrorReason, message: string, options?: ApiErrorOptions) =>
  new ApiError(409, GrpcCode.FAILED_PRECONDITION, reason, message, options);

export const tooManyRequests = (reason: ErrorReason, message: string, retryAfterSeconds: number) =>
  new ApiError(429, GrpcCode.RESOURCE_EXHAUSTED, reason, message, { headers: { "Retry-After": String(retryAfterSeconds) } });
