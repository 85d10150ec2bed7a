// `npm run sandbox`: the real server, started as `npm start` starts it (the configuration from the
// environment through loadConfig, then startServer), but as the sandbox (startServer's `sandbox`:
// its clock moved forward on demand, SandboxClockService), on a fresh SQLite database that is deleted and
// recreated at every start, then seeded through the real API (scripts/sandbox/seed.ts). Prints what a
// partner needs and writes it as JSON to <dir>/sandbox.json.
//
//   npm run sandbox -- [--port 8080] [--host 127.0.0.1] [--dir ./sandbox] [--json]
//
// --json prints the JSON instead of the text. The folder is emptied at start: do not point it at
// anything else. The bootstrap super admin's credential is fixed (SANDBOX_ADMIN below).
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/core/logger.js";
import { startServer } from "../src/server.js";
import { JWT_ALG, JWT_KID, serveJwks } from "./sandbox/jwks.js";
import { report, type SandboxInfo } from "./sandbox/report.js";
import { seed } from "./sandbox/seed.js";

/** Known in advance, so that scripts and docs can use it: a sandbox holds nothing worth protecting. */
export const SANDBOX_ADMIN = { clientId: "sandbox-admin", clientSecret: "sandbox-admin-secret-not-for-production" };

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "8080" },
    host: { type: "string", default: "127.0.0.1" },
    dir: { type: "string", default: "sandbox" },
    json: { type: "boolean", default: false },
  },
});

const dir = resolve(values.dir);
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });

const privateJwkFile = resolve(dir, "jwt-private.jwk.json");
const jwks = await serveJwks(privateJwkFile);
const database = resolve(dir, "tenant.sqlite");
const port = values.port;
const baseUrl = `http://${values.host.includes(":") ? `[${values.host}]` : values.host}:${port}`;
const config = loadConfig({
  ...process.env,
  PORT: port,
  HOST: values.host,
  BASE_URL: baseUrl,
  DATABASE_URL: `sqlite:${database}`,
  // The sandbox's own key and admin, whatever the environment says of them.
  SECRETS_KEY: "",
  SECRETS_KEY_FILE: resolve(dir, "secrets.key"),
  // The JWT listener's JWKS is this process's http loopback URL, which the server refuses otherwise.
  JWKS_ALLOW_INSECURE: "1",
  BOOTSTRAP_CLIENT_ID: SANDBOX_ADMIN.clientId,
  BOOTSTRAP_CLIENT_SECRET: SANDBOX_ADMIN.clientSecret,
  BOOTSTRAP_CREDENTIAL_FILE: "",
  LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
});
const server = await startServer({ config, logger: createLogger(config.logLevel), sandbox: true });

// The JWKS server is this process's: it ends with it. A second signal (npm forwards the terminal's
// SIGINT that the process got too) changes nothing.
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  jwks.server.close();
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);

const seeded = await seed({ baseUrl, admin: SANDBOX_ADMIN, jwksUrl: jwks.url, privateJwk: jwks.privateJwk });
await server.worker.idle();
const info: SandboxInfo = { ...seeded, baseUrl, dir, database, jwtKey: { privateJwkFile, kid: JWT_KID, alg: JWT_ALG } };
const json = JSON.stringify(info, null, 2) + "\n";
writeFileSync(resolve(dir, "sandbox.json"), json, { mode: 0o600 });
process.stdout.write(values.json ? json : report(info));
