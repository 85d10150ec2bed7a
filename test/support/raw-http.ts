// One HTTP request with every byte the test's choice: the request target sent as given (so `%ff`
// or `..` reach the server unnormalized), any headers, a Buffer body. Answers the status, the
// headers and the body text; a connection the server closes after answering is not an error.
import http from "node:http";

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
