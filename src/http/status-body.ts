// Renders the contract's one error body (`Status`) for an ApiError and a request id.
import type { components } from "../../generated/api.js";
import type { ApiError } from "../core/errors.js";

export type StatusBody = components["schemas"]["Status"];

export const ERROR_DOMAIN = "api.tenant";

export function statusBody(error: ApiError, requestId: string): StatusBody {
  const details: StatusBody["details"] = [
    { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: error.reason, domain: ERROR_DOMAIN, metadata: error.metadata },
    { "@type": "type.googleapis.com/google.rpc.RequestInfo", requestId },
  ];
  if (error.violations.length > 0) {
    details.push({ "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: error.violations });
  }
  return { code: error.code, message: error.message, details };
}
