// Shared by the spend HTTP tests: calls of every SpendService operation by name for one client
// (bodies `unknown` so tests can send bad ones), an Idempotency-Key per Authorize unless given,
// and a server with an admin, a subject and the subject's funds calls.
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, expect } from "vitest";
import { watchPgQueries } from "../../../bench/servers/pg-queries.js";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { amount, funds, money, newAppId, type Answer, type Funds, type Schemas } from "../limits/helpers.js";

export type Authorization = Schemas["SpendAuthorization"];

export interface ListQuery {
  user_id?: string;
  app_id?: string;
  state?: string;
  window_start?: string;
  page_size?: number;
  page_token?: string;
}

export function spends(client: ApiClient) {
  const id = (authorization_id: string) => ({ params: { path: { authorization_id } } });
  const key = (k: string | null | undefined) => (k === null ? {} : { "Idempotency-Key": k ?? randomUUID() });
  return {
    /** `key` null sends no Idempotency-Key; undefined a fresh one. */
    authorize: (body: unknown, k?: string | null) =>
      client.POST("/api/v1/funds/spend-authorizations", { params: { header: key(k) as never }, body: body as never }),
    simulate: (body: unknown) => client.POST("/api/v1/funds/spend-authorizations/simulate", { body: body as never }),
    capture: (a: string, body: unknown = {}, k: string | null = null) =>
      client.POST("/api/v1/funds/spend-authorizations/{authorization_id}/capture", { params: { path: { authorization_id: a }, header: key(k) as never }, body: body as never }),
    release: (a: string, body: unknown = {}, k: string | null = null) =>
      client.POST("/api/v1/funds/spend-authorizations/{authorization_id}/release", { params: { path: { authorization_id: a }, header: key(k) as never }, body: body as never }),
    reverse: (a: string, body: unknown = {}, k: string | null = null) =>
      client.POST("/api/v1/funds/spend-authorizations/{authorization_id}/reverse", { params: { path: { authorization_id: a }, header: key(k) as never }, body: body as never }),
    get: (a: string) => client.GET("/api/v1/funds/spend-authorizations/{authorization_id}", id(a)),
    list: (query: ListQuery = {}) => client.GET("/api/v1/funds/spend-authorizations", { params: { query: query as never } }),
  };
}

export type Spends = ReturnType<typeof spends>;

export interface SpendServer {
  ts: TestServer;
  admin: Funds;
  spend: Spends;
  subject: { userId: string; f: Funds; s: Spends };
}

/** A test server with the admin's funds and spend calls, and a ROLE_USER subject's own. */
export async function startSpendServer(env: Record<string, string> = {}): Promise<SpendServer> {
  const ts = await startTestServer(env);
  const user = await ts.userClient(["ROLE_USER"]);
  return { ts, admin: funds(ts.admin), spend: spends(ts.admin), subject: { userId: user.userId, f: funds(user.client), s: spends(user.client) } };
}

/** Starts a spend server before the file's tests (handed to `use`) and stops it after them. */
export function spendServerForFile(use: (server: SpendServer) => void): void {
  let ts: TestServer | undefined;
  beforeAll(async () => {
    const server = await startSpendServer();
    ts = server.ts;
    use(server);
  });
  afterAll(async () => ts?.stop());
}

export { amount, funds, money, newAppId };

/** A fresh app whose subject row has `limit` (an amount in units, or a limit object) per `period`. */
export async function appWithLimit(admin: Funds, userId: string, limit: string | object, period?: string): Promise<string> {
  const app = newAppId("spend");
  unwrap(await admin.setLimit(userId, app, { limit: typeof limit === "string" ? amount(limit) : limit, ...(period ? { period } : {}) }));
  return app;
}

/** Authorizes and answers the authorization (200 expected). */
export async function authorized(s: Spends, body: { userId: string; appId: string; amount: unknown; holdSeconds?: number; capture?: boolean; metadata?: object }): Promise<Authorization> {
  const r = await s.authorize(body);
  expect(r.response.status, JSON.stringify(r.error)).toBe(200);
  return unwrap(r).authorization;
}

/** What a spend server watched by `watchingQueries` sent to PostgreSQL: each query's client and text. */
export interface SentQuery {
  client: pg.Client;
  text: string;
}

/**
 * The statements of the server's background tasks: the change watches' polls, the worker's claim
 * (src/automations/execution-claims.ts), the instance heartbeat (src/storage/live-instances.ts), the readiness
 * check's `select 1` (src/storage/reachability.ts) and the sweeps of idempotency records and webhook
 * events. Any of them may land on a connection a request used.
 */
const BACKGROUND = /^(select "version" from "change_versions"|select \* from claim_executions\(|select 1$)|"instance_heartbeats"|^delete from "(idempotency_records|webhook_events)" where "(created_at|received_at)" <=/;

/** A spend server and what it sent to PostgreSQL; `server` is set once the file's tests start. */
export class WatchedServer {
  server!: SpendServer;
  readonly sent: SentQuery[] = [];

  /**
   * What one request (answered 200) sent on the connections whose queries match `touching` (other
   * connections, the workers', query meanwhile), less the background tasks' statements that a
   * pooled connection may also serve in that time.
   */
  async roundTrips(touching: RegExp, request: () => Promise<Answer>): Promise<string[]> {
    this.sent.length = 0;
    const answer = await request();
    expect(answer.response.status, JSON.stringify(answer.error)).toBe(200);
    const clients = new Set(this.sent.filter((s) => touching.test(s.text)).map((s) => s.client));
    const ours = this.sent.filter((s) => clients.has(s.client) && !BACKGROUND.test(s.text)).map((s) => s.text);
    if (process.env.SHOW_ROUND_TRIPS) console.log(ours.map((s) => s.slice(0, 140)).join("\n"));
    return ours;
  }
}

/**
 * On PostgreSQL, registers hooks that watch every query the pg client sends
 * (bench/servers/pg-queries.ts) and start a spend server, stopped after the file's tests; `.server`
 * is that server, `.sent` what it sent. On SQLite the hooks do nothing (no round trips to count).
 */
export function watchingQueries(): WatchedServer {
  const watched = new WatchedServer();
  let stopWatching: (() => void) | undefined;
  beforeAll(async () => {
    if (testDialect() !== "postgres") return;
    stopWatching = watchPgQueries((client, text) => watched.sent.push({ client, text }));
    watched.server = await startSpendServer();
  });
  afterAll(async () => {
    stopWatching?.();
    await watched.server?.ts.stop();
  });
  return watched;
}
