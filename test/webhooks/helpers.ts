// Shared by the webhook tests: ApiError assertions, a JWKS served over real HTTP on 127.0.0.1,
// and a signer of webhook JWTs.
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { expect } from "vitest";
import { ApiError } from "../../src/core/errors.js";

export function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected a throw");
}

export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

/** Asserts an ApiError with this status and reason; returns it. */
export function expectApiError(error: unknown, status: number, reason: string): ApiError {
  expect(error).toBeInstanceOf(ApiError);
  const e = error as ApiError;
  expect({ status: e.status, reason: e.reason, message: e.message }).toMatchObject({ status, reason });
  return e;
}

export type Alg = "RS256" | "ES256" | "EdDSA";

export interface TestKey {
  alg: Alg;
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function makeKey(alg: Alg, kid: string): Promise<TestKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { alg, kid, privateKey, publicJwk };
}

export async function signJwt(key: TestKey, payload: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, ...header }).sign(key.privateKey);
}

export const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

export type Responder = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** An HTTP server on 127.0.0.1 that counts its requests; `respond` can be swapped between tests. */
export class TestServer {
  hits = 0;
  respond: Responder;
  private constructor(
    private readonly server: http.Server,
    initial: Responder,
  ) {
    this.respond = initial;
  }

  static async start(respond: Responder): Promise<TestServer> {
    let self: TestServer | undefined;
    const server = http.createServer((req, res) => {
      if (!self) return res.end();
      self.hits++;
      self.respond(req, res);
    });
    self = new TestServer(server, respond);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = "/jwks.json"): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export const serveJson =
  (body: () => unknown): Responder =>
  (_req, res) => {
    const text = JSON.stringify(body());
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };
