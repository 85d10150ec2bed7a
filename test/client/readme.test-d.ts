// What the client package's README (scripts/pack-client.README.md) says of the client's types, held
// against the declarations: a README that promises another type than the code gives fails here.
import { describe, expectTypeOf, it } from "vitest";
import {
  ApiRequestError,
  createApiClient,
  TokenError,
  type ApiClientOptions,
  type ErrorReason,
  type RetryOptions,
} from "../../src/client/index.js";

describe("the client README's types", () => {
  it("ApiRequestError: status, reason (an ErrorReason, or undefined), requestId and body", () => {
    expectTypeOf<ApiRequestError["status"]>().toEqualTypeOf<number>();
    expectTypeOf<Exclude<ApiRequestError["reason"], undefined>>().toEqualTypeOf<ErrorReason>();
    expectTypeOf<undefined>().toExtend<ApiRequestError["reason"]>();
    expectTypeOf<ApiRequestError["requestId"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ApiRequestError["body"]>().toEqualTypeOf<unknown>();
    expectTypeOf<TokenError["error"]>().toEqualTypeOf<string | undefined>();
  });

  it("createApiClient's options: baseUrl, and optionally credentials, fetch, refreshSkewSeconds and retry", () => {
    expectTypeOf(createApiClient).parameter(0).toEqualTypeOf<ApiClientOptions>();
    expectTypeOf<ApiClientOptions["baseUrl"]>().toEqualTypeOf<string>();
    expectTypeOf<ApiClientOptions["credentials"]>().toEqualTypeOf<{ clientId: string; clientSecret: string } | undefined>();
    expectTypeOf<ApiClientOptions["refreshSkewSeconds"]>().toEqualTypeOf<number | undefined>();
    expectTypeOf<ApiClientOptions["retry"]>().toEqualTypeOf<RetryOptions | undefined>();
  });

  it("RetryOptions: the bounds, the backoff and the generated keys, every one optional", () => {
    expectTypeOf<{}>().toExtend<RetryOptions>();
    expectTypeOf<Pick<Required<RetryOptions>, "maxAttempts" | "maxElapsedMs" | "baseDelayMs" | "maxDelayMs">>().toEqualTypeOf<{
      maxAttempts: number;
      maxElapsedMs: number;
      baseDelayMs: number;
      maxDelayMs: number;
    }>();
    expectTypeOf<RetryOptions["generateIdempotencyKeys"]>().toEqualTypeOf<boolean | undefined>();
  });
});
