// unwrap and ApiRequestError: what a caller learns from a failed answer (status, the ErrorInfo
// reason, the request id, the body), from a Status body and from whatever else a proxy may send.
import { describe, expect, it } from "vitest";
import { ApiRequestError, errorReason, TokenError, unwrap } from "../../src/client/index.js";

const status = (reason: string, requestId: string) => ({
  code: 7,
  message: "the caller's role may not call this operation",
  details: [
    { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason, domain: "api.tenant", metadata: {} },
    { "@type": "type.googleapis.com/google.rpc.RequestInfo", requestId },
  ],
});

const answer = (statusCode: number, headers: Record<string, string> = {}) => new Response(null, { status: statusCode, headers });

function thrown(call: () => unknown): ApiRequestError {
  try {
    call();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiRequestError);
    return e as ApiRequestError;
  }
  throw new Error("nothing was thrown");
}

describe("unwrap", () => {
  it("answers the body of a 2xx answer", () => {
    expect(unwrap({ data: { fundPolicy: { currencyCode: "EUR" } }, response: answer(200) })).toEqual({ fundPolicy: { currencyCode: "EUR" } });
  });

  it("throws an ApiRequestError with the status, the reason, the request id and the body of a Status answer", () => {
    const body = status("ROLE_NOT_ALLOWED", "01JD3Z6Q0N6V4Y2M9H8K7C5B3A");
    const e = thrown(() => unwrap({ error: body, response: answer(403, { "X-Request-Id": "01JD3Z6Q0N6V4Y2M9H8K7C5B3A" }) }));
    expect(e.name).toBe("ApiRequestError");
    expect(e).toMatchObject({ status: 403, reason: "ROLE_NOT_ALLOWED", requestId: "01JD3Z6Q0N6V4Y2M9H8K7C5B3A", body });
    expect(e.message).toBe("403 ROLE_NOT_ALLOWED: the caller's role may not call this operation (request id 01JD3Z6Q0N6V4Y2M9H8K7C5B3A)");
  });

  it("takes the reason from the ErrorInfo wherever it is among the details, and the request id from the body before the header", () => {
    const body = status("LIMIT_NOT_FOUND", "from-body");
    body.details.reverse();
    const e = thrown(() => unwrap({ error: body, response: answer(404, { "X-Request-Id": "from-header" }) }));
    expect(e).toMatchObject({ status: 404, reason: "LIMIT_NOT_FOUND", requestId: "from-body" });
  });

  it("keeps the status and the header's request id when the body is not a Status (a proxy's page), without inventing a reason", () => {
    for (const error of ["<html>Bad Gateway</html>", undefined, null, { details: "nope" }, { details: [null, 3, { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: 42 }] }]) {
      const e = thrown(() => unwrap({ error, response: answer(502, { "X-Request-Id": "rid-1" }) }));
      expect(e).toMatchObject({ status: 502, reason: undefined, requestId: "rid-1", body: error });
      expect(e.message).toBe("502: request failed (request id rid-1)");
    }
  });

  it("refuses a 2xx answer without a body, and an error answer that openapi-fetch parsed as data", () => {
    expect(thrown(() => unwrap({ response: answer(204) })).status).toBe(204);
    expect(thrown(() => unwrap({ data: {}, response: answer(500) })).status).toBe(500);
  });
});

describe("errorReason", () => {
  it("is the ErrorInfo reason of a Status body, and undefined for anything else", () => {
    expect(errorReason(status("INVALID_CLIENT", "r"))).toBe("INVALID_CLIENT");
    expect(errorReason({ message: "no details" })).toBeUndefined();
    expect(errorReason("text")).toBeUndefined();
  });
});

describe("TokenError", () => {
  it("is an ApiRequestError that also carries the OAuth error code", () => {
    const e = new TokenError(answer(401), { ...status("INVALID_CLIENT", "r2"), message: "client authentication failed", error: "invalid_client" });
    expect(e).toBeInstanceOf(ApiRequestError);
    expect(e).toMatchObject({ name: "TokenError", status: 401, reason: "INVALID_CLIENT", error: "invalid_client", requestId: "r2" });
    expect(e.message).toBe("401 INVALID_CLIENT: client authentication failed (request id r2)");
  });
});
