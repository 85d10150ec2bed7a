// Operations of the contract whose implementation has not landed yet answer 501 with the contract's
// error body, so the server starts and tells callers plainly instead of failing obscurely.
import { ApiError, GrpcCode } from "../../core/errors.js";

export function pendingService<T extends object>(service: string): T {
  return new Proxy({} as T, {
    get: (_target, method) => async () => {
      throw new ApiError(501, GrpcCode.UNIMPLEMENTED, "NOT_IMPLEMENTED", `${service}.${String(method)} is not implemented by this server yet`);
    },
  });
}
