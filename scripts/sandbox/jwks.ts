// The sandbox's JWT sender key: an ES256 pair made at start, its public half served as a JWKS on a
// loopback port (the JWT listener's jwksUrl), its private half written as a JWK for the sender script.
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWK } from "jose";

export const JWT_ALG = "ES256";
export const JWT_KID = "sandbox-1";

export interface SandboxJwks {
  url: string;
  privateJwk: JWK;
  server: Server;
}

/** Serves the public key at `http://127.0.0.1:<port>/jwks.json` and writes the private JWK to `privateJwkPath`. */
export async function serveJwks(privateJwkPath: string): Promise<SandboxJwks> {
  const { publicKey, privateKey } = await generateKeyPair(JWT_ALG, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid: JWT_KID, alg: JWT_ALG, use: "sig" };
  const privateJwk = { ...(await exportJWK(privateKey)), kid: JWT_KID, alg: JWT_ALG };
  writeFileSync(privateJwkPath, JSON.stringify(privateJwk, null, 2) + "\n", { mode: 0o600 });
  const body = JSON.stringify({ keys: [publicJwk] });
  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/jwks.json") res.writeHead(200, { "Content-Type": "application/json" }).end(body);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`, privateJwk, server };
}
