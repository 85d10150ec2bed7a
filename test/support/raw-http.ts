// One HTTP request with every byte the test's choice: the request target sent as given (so `%ff`
// or `..` reach the server unnormalized), any headers, a Buffer body. Answers the status, the
// headers and the body text; a connection the server closes after answering is not an error.
// And bytes no HTTP client sends (broken framing, pipelined requests) on a bare connection.
import http from "node:http";
import { connect } from "node:net";

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** `from`: the local address to connect from (loopback is 127.0.0.0/8: a test can be several clients). */
export function rawRequest(baseUrl: string, method: string, target: string, headers: Record<string, string | string[]>, body?: Buffer, from?: string): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(
      { host: url.hostname, port: url.port, method, path: target, agent: false, ...(from ? { localAddress: from } : {}), headers: { ...headers, ...(body ? { "Content-Length": String(body.length) } : {}) } },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", () => undefined);
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", (e) => {
      if (!answered) reject(e);
    });
    req.end(body);
  });
}

export interface ExchangeOptions {
  /** Between two parts, so that the server has the request before the rest arrives. */
  gapMs?: number;
  /** Ends the sending side after the last part (the server may still answer). */
  halfClose?: boolean;
  /** Ends the sending side this long after the last part, unless the server closed the connection by then. */
  halfCloseAfterMs?: number;
  timeoutMs?: number;
}

/** Writes `parts` on one fresh connection and answers every byte the server sent until it closed the connection. */
export function rawExchange(baseUrl: string, parts: readonly (string | Buffer)[], { gapMs = 0, halfClose = false, halfCloseAfterMs, timeoutMs = 10_000 }: ExchangeOptions = {}): Promise<string> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    let answer = "";
    const socket = connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true }, async () => {
      for (const [i, part] of parts.entries()) {
        if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        if (!socket.writable) return;
        socket.write(part);
      }
      if (halfClose) socket.end();
      else if (halfCloseAfterMs !== undefined) setTimeout(() => socket.writable && socket.end(), halfCloseAfterMs);
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${timeoutMs} ms; it sent: ${JSON.stringify(answer.slice(0, 500))}`));
    }, timeoutMs);
    socket.on("data", (d: Buffer) => (answer += d.toString()));
    // The server's FIN: it sent all it will.
    socket.on("end", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    });
    socket.on("error", () => undefined);
  });
}

export interface ParsedAnswer {
  status: number;
  headers: Headers;
  text: string;
  body: Record<string, any> | undefined;
}

/** The HTTP/1.1 answers in `raw`, in order, each body framed by its Content-Length (not for HEAD). */
export function parseAnswers(raw: string): ParsedAnswer[] {
  const answers: ParsedAnswer[] = [];
  let rest = raw;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) throw new Error(`an incomplete answer: ${JSON.stringify(rest.slice(0, 300))}`);
    const [statusLine = "", ...fields] = rest.slice(0, end).split("\r\n");
    const headers = new Headers(fields.map((f) => [f.slice(0, f.indexOf(":")), f.slice(f.indexOf(":") + 1).trim()] as [string, string]));
    const length = Number(headers.get("content-length") ?? 0);
    const text = Buffer.from(rest.slice(end + 4)).subarray(0, length).toString();
    rest = Buffer.from(rest.slice(end + 4)).subarray(length).toString();
    answers.push({ status: Number(statusLine.split(" ")[1]), headers, text, body: text.startsWith("{") ? (JSON.parse(text) as Record<string, any>) : undefined });
  }
  return answers;
}
