// Gives a call of an operation that takes an Idempotency-Key one of its own when it sends none, so
// that its retries are answered by the first answer instead of being done again. Once per call:
// every attempt of the call sends the same key.
import type { Middleware } from "openapi-fetch";
import { idempotencyKeyOperations } from "../../generated/idempotency.js";

const TAKES_A_KEY = new Set<string>(idempotencyKeyOperations);

export const idempotencyKeys: Middleware = {
  onRequest({ request, schemaPath }) {
    if (request.headers.has("Idempotency-Key") || !TAKES_A_KEY.has(`${request.method} ${schemaPath}`)) return undefined;
    // WebCrypto, as in Node 20 and in browsers (there in a secure context: https or localhost).
    request.headers.set("Idempotency-Key", crypto.randomUUID());
    return request;
  },
};
