// A real server on an ephemeral port with a fresh database file and a clock the test moves, plus
// typed clients for its bootstrap super-admin and for users the test creates. Every answer any
// client receives is checked against the contract: a response that breaks it fails the test.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { Middleware } from "openapi-fetch";
import { expect } from "vitest";
import { loadConfig } from "../../src/config.js";
import { ManualClock } from "../../src/core/clock.js";
import { createLogger } from "../../src/core/logger.js";
import { createApiClient, unwrap, type ApiClient } from "../../src/client/index.js";
import { startServer, type RunningServer, type ServerOptions } from "../../src/server.js";
import { operations, responseErrors } from "./contract.js";
import { createTestDatabase } from "./database.js";
import { freePort } from "./process.js";

export const BOOTSTRAP = { clientId: "bootstrap-admin", clientSecret: "bootstrap-secret-for-tests-only" };

export type TestRole = "ROLE_SUPER_ADMIN" | "ROLE_FUND_ADMIN" | "ROLE_USER" | "ROLE_APP_SERVICE";

/** The app a ROLE_APP_SERVICE user made by `userClient` acts for unless the test names others. */
export const DEFAULT_APP_ID = "app-test-service";

export interface TestUser {
  userId: string;
  client: ApiClient;
  clientId: string;
  clientSecret: string;
  /** The apps its credential is bound to (`[]` unless ROLE_APP_SERVICE). */
  appIds: string[];
}

export interface TestServer {
  url: string;
  /** The DATABASE_URL of the database made for it (before `options.reachDatabase`), for a test that writes what no operation does or holds a lock of its own. */
  databaseUrl: string;
  clock: ManualClock;
  server: RunningServer;
  /** The bootstrap super-admin. */
  admin: ApiClient;
  /** A client without credentials. */
  anonymous: ApiClient;
  /**
   * Creates a user with these roles and a client acting as that user. The credential is bound to
   * `options.appIds`; a ROLE_APP_SERVICE user's to `[DEFAULT_APP_ID]` when none are given (its
   * credential must name at least one app).
   */
  userClient(roles: TestRole[], name?: string, options?: { appIds?: string[] }): Promise<TestUser>;
  client(credentials: { clientId: string; clientSecret: string }): ApiClient;
  stop(): Promise<void>;
}

/** Fails the test when an answer's body breaks the contract (any status). */
const contractCheck: Middleware = {
  async onResponse({ request, response, schemaPath }) {
    const op = operations.find((o) => o.path === schemaPath && o.method === request.method.toLowerCase());
    if (!op) return undefined;
    const text = await response.clone().text();
    const body: unknown = text ? JSON.parse(text) : undefined;
    expect(responseErrors(op.operationId, response.status, body), `${op.operationId} answered ${response.status} ${text.slice(0, 300)}`).toEqual([]);
    return undefined;
  },
};

let counter = 0;

export interface TestServerOptions extends Pick<ServerOptions, "jwksFetch" | "notifications" | "principalsPoll" | "fundPolicyPoll" | "listenersPoll" | "workerStuckMs" | "retentionPace" | "auditInboxMoveMs" | "signingKeysReloadMs" | "sandbox"> {
  /** The DATABASE_URL the server is given for the database made for it, e.g. through a proxy of the test's. */
  reachDatabase?: (url: string) => Promise<string>;
}

export async function startTestServer(env: Record<string, string> = {}, logs?: NodeJS.WritableStream, options: TestServerOptions = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "tenant-api-"));
  const clock = new ManualClock(Date.parse("2026-11-20T09:00:00Z"));
  const port = await freePort();
  const database = await createTestDatabase(dir);
  const config = loadConfig({
    // A known port, so that BASE_URL (listener URLs, the JWT `sub` and `aud`) is the real address.
    PORT: String(port),
    BASE_URL: `http://127.0.0.1:${port}`,
    HOST: "127.0.0.1",
    DATABASE_URL: (await options.reachDatabase?.(database.url)) ?? database.url,
    // A key of the test's own, unless it gives one (the two together are refused).
    ...(env.SECRETS_KEY ? {} : { SECRETS_KEY_FILE: join(dir, "secrets.key") }),
    JWKS_ALLOW_INSECURE: "1",
    BOOTSTRAP_CLIENT_ID: BOOTSTRAP.clientId,
    BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP.clientSecret,
    LOG_LEVEL: "silent",
    VALIDATE_RESPONSES: "1",
    ...env,
  });
  const server = await startServer({ config, clock, logger: logs ? createLogger("info", logs) : createLogger("silent"), jwksFetch: options.jwksFetch, notifications: options.notifications, principalsPoll: options.principalsPoll, fundPolicyPoll: options.fundPolicyPoll, listenersPoll: options.listenersPoll, workerStuckMs: options.workerStuckMs, retentionPace: options.retentionPace, auditInboxMoveMs: options.auditInboxMoveMs, signingKeysReloadMs: options.signingKeysReloadMs, sandbox: options.sandbox });
  const make = (credentials?: { clientId: string; clientSecret: string }) => {
    const c = createApiClient({ baseUrl: server.url, ...(credentials ? { credentials } : {}) });
    c.use(contractCheck);
    return c;
  };
  const admin = make(BOOTSTRAP);
  return {
    url: server.url,
    databaseUrl: database.url,
    clock,
    server,
    admin,
    anonymous: make(),
    client: make,
    async userClient(roles, name, options = {}) {
      const n = ++counter;
      const { user } = unwrap(
        await admin.POST("/api/v1/users", { body: { displayName: name ?? `User ${n}`, email: `user${n}-${Date.now()}@example.com`, roles } }),
      );
      const appIds = options.appIds ?? (roles.includes("ROLE_APP_SERVICE") ? [DEFAULT_APP_ID] : []);
      const cred = unwrap(await admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.id! } }, body: appIds.length > 0 ? { appIds } : {} }));
      const credentials = { clientId: cred.credential.clientId, clientSecret: cred.clientSecret };
      return { userId: user.id!, client: make(credentials), ...credentials, appIds };
    },
    async stop() {
      await server.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An access token of the bootstrap super-admin, from the server's token endpoint over HTTP. */
export async function bootstrapToken(url: string): Promise<string> {
  const answer = await fetch(`${url}/auth/v1/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret }),
  });
  return ((await answer.json()) as { access_token: string }).access_token;
}

/** A log stream for startTestServer, and the text written to it so far. */
export function logCapture(): { stream: PassThrough; text(): string } {
  let text = "";
  const stream = new PassThrough();
  stream.on("data", (d: Buffer) => (text += d.toString()));
  return { stream, text: () => text };
}
