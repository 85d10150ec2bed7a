// Requests that Node's HTTP parser refuses: a header section over Node's 16 KB limit, malformed HTTP, a
// request too slow to arrive, a body whose framing breaks. The contract promises the Status body on
// every non-2xx answer, which Node's own answers lack (and once the app has the request it gives none):
// each refusal is answered where the connection still allows it, after the answers already due on it,
// and the connection is then closed. docs/partners.md, "Conventions of the API".
import { randomUUID } from "node:crypto";
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError, GrpcCode, type ErrorReason } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { withLogIds, type Span } from "../core/spans.js";
import { publishErrorAnswer } from "./error-answers.js";
import { spanOf } from "./request-span.js";
import { statusBody } from "./status-body.js";

interface Refusal {
  status: number;
  reason: ErrorReason;
  message: string;
}

const REFUSALS: Record<string, Refusal> = {
  HPE_HEADER_OVERFLOW: { status: 431, reason: "HEADERS_TOO_LARGE", message: "the request's header section exceeds 16 KB" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: "REQUEST_TIMEOUT", message: "the request did not arrive in time" },
};
const MALFORMED: Refusal = { status: 400, reason: "MALFORMED_HTTP_REQUEST", message: "the request is not well-formed HTTP/1.1" };

/** The last request each connection handed to the app, with its response. */
const dispatched = new WeakMap<Duplex, { req: IncomingMessage; res: ServerResponse }>();
/** Connections whose parser failure is handled: a failed parser fails again on every later byte. */
const handled = new WeakSet<Duplex>();
/** Requests whose answer is the parser's refusal: the app must not run them (request-body.ts), nor answer them again (error-response.ts). */
const refused = new WeakSet<IncomingMessage>();

/** Whether `req` was answered with the parser's refusal (its body's framing broke). */
export const wasRefused = (req: IncomingMessage): boolean => refused.has(req);

/**
 * Installs the server's `clientError` listener, and a `request` listener that keeps the bookkeeping it
 * needs and refuses, as the parser refuses framing it cannot read, a transfer coding other than
 * chunked alone: Node takes `gzip, chunked` for chunked and hands over the bytes still gzipped.
 */
export function answerClientErrors(server: Server, logger: Logger, onRefused?: ParserRefusals): void {
  const refuse = answerClientError(logger, onRefused);
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    dispatched.set(req.socket, { req, res });
    const coding = req.headers["transfer-encoding"];
    if (coding !== undefined && coding.trim().toLowerCase() !== "chunked") {
      refuse(Object.assign(new Error("a transfer coding other than chunked"), { code: "UNSUPPORTED_TRANSFER_CODING" }), req.socket);
    }
  });
  server.on("clientError", refuse);
}

/** Told of each request the parser refused, which no step of the app sees (the metrics). */
export type ParserRefusals = (reason: ErrorReason) => void;

/** The `clientError` listener: answers with the Status body where the connection allows it, then closes it. */
export function answerClientError(logger: Logger, onRefused?: ParserRefusals) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    if (handled.has(socket)) return;
    handled.add(socket);
    // A reset connection cannot be answered.
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const refusal = (err.code && REFUSALS[err.code]) || MALFORMED;
    // The parser's code only: the raw packet may hold credentials.
    // The span of the request the app had, when traced; none for bytes that began no request.
    const report = (requestId: string, span?: Span) => {
      logger.warn(withLogIds({ msg: "refused by the HTTP parser", requestId, status: refusal.status, reason: refusal.reason, parserCode: err.code }, span));
      onRefused?.(refusal.reason);
      const body = statusBody(new ApiError(refusal.status, GrpcCode.INVALID_ARGUMENT, refusal.reason, refusal.message), requestId);
      publishErrorAnswer({ operationId: undefined, status: refusal.status, body });
      return JSON.stringify(body);
    };
    const last = dispatched.get(socket);
    if (last && !last.req.complete) refuseDispatched(last.req, last.res, socket, refusal, report);
    else afterAnswersDue(last?.res, () => writeRefusal(socket, refusal, report));
  };
}

/**
 * The request the app has, whose body broke: its answer is the refusal, unless the app already began
 * one (answered before reading the body), after which the connection can only be closed.
 */
function refuseDispatched(req: IncomingMessage, res: ServerResponse, socket: Duplex, { status }: Refusal, report: (requestId: string, span?: Span) => string): void {
  if (res.headersSent) {
    afterAnswersDue(res, () => socket.end());
    return;
  }
  refused.add(req);
  const requestId = String(res.getHeader("x-request-id") ?? randomUUID());
  const body = report(requestId, spanOf(res));
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    "X-Request-Id": requestId,
    Connection: "close",
  });
  res.end(body);
  // Its body never ends now: whoever reads it learns so when the connection is gone.
  socket.once("close", () => req.destroy());
}

/** Runs `then` once `res` (the last answer due on the connection, if any) is finished. */
function afterAnswersDue(res: ServerResponse | undefined, then: () => void): void {
  if (!res || res.writableFinished) then();
  else res.once("finish", then);
}

function writeRefusal(socket: Duplex, { status }: Refusal, report: (requestId: string) => string): void {
  // The answer due before it closed the connection (it was sent with Connection: close).
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const body = report(requestId);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
}
