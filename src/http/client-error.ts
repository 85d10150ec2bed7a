// Requests that Node's HTTP parser refuses before Express sees them: a header section over Node's
// 16 KB limit, malformed HTTP, a request whose headers took too long to arrive. The contract promises
// the Status body on every non-2xx answer, which Node's own answers to these lack.
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError, GrpcCode, type ErrorReason } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { publishErrorAnswer } from "./error-answers.js";
import { statusBody } from "./status-body.js";

interface Refusal {
  status: number;
  reason: ErrorReason;
  message: string;
}

const REFUSALS: Record<string, Refusal> = {
  HPE_HEADER_OVERFLOW: { status: 431, reason: "HEADERS_TOO_LARGE", message: "the request's header section exceeds 16 KB" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: "REQUEST_TIMEOUT", message: "the request's headers did not arrive in time" },
};
const MALFORMED: Refusal = { status: 400, reason: "MALFORMED_HTTP_REQUEST", message: "the request is not well-formed HTTP/1.1" };

/** The `clientError` listener of the server: answers with the Status body, then closes the connection. */
export function answerClientError(logger: Logger) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    // A reset connection cannot be answered; nor can one whose response is already being written.
    if (err.code === "ECONNRESET" || !socket.writable || (socket as { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const { status, reason, message } = (err.code && REFUSALS[err.code]) || MALFORMED;
    const requestId = randomUUID();
    // The parser's code only: the raw packet may hold credentials.
    logger.info({ msg: "refused before routing", requestId, status, parserCode: err.code });
    const answer = statusBody(new ApiError(status, GrpcCode.INVALID_ARGUMENT, reason, message), requestId);
    publishErrorAnswer({ operationId: undefined, status, body: answer });
    const body = JSON.stringify(answer);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  };
}
