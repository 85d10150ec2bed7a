// The database unavailable for the moment is 503 UNAVAILABLE with Retry-After, the contract's
// Status body and a warning in the log, never a 500 nor the database's address; the service
// resumes by itself once the database is back. Each case makes it happen for real, over HTTP:
// - PostgreSQL, contention: authorizations wait on the subject and app's spend lock that the test holds
//   until they hold every connection of a small pool; the next requests wait for a connection past
//   the pool's timeout. One waiting authorization's backend is then terminated (57P01).
// - PostgreSQL, down: the server reaches its database through the test's TCP proxy, which the test
//   closes (connections reset, new ones refused) and opens again; or that loses the reply to a
//   COMMIT, after which the retry with the same Idempotency-Key must replay, not spend again.
// - SQLite: another connection (as another process would) holds the write lock past the busy timeout.
import { createServer, connect, type Server, type Socket } from "node:net";
import { randomUUID } from "node:crypto";
import SQLite from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../src/client/index.js";
import { testDialect } from "../support/database.js";
import { BOOTSTRAP, logCapture, startTestServer } from "../support/server.js";
import { amount, expectError, funds, money, newAppId } from "./funds-helpers.js";
import { spends } from "./spends-helpers.js";

interface Answer {
  error?: unknown;
  response: Response;
}

/** 503 UNAVAILABLE in the contract's Status body, with Retry-After, naming no database. */
function expectUnavailable(answer: Answer, databaseUrl: string): void {
  expectError(answer, 503, "UNAVAILABLE");
  expect(answer.error).toMatchObject({ code: 14, message: "the service is temporarily unavailable; retry after the time in Retry-After" });
  expect(answer.response.headers.get("retry-after")).toBe("1");
  expect(JSON.stringify(answer.error)).not.toContain(new URL(databaseUrl.replace(/^sqlite:/, "file:")).pathname);
}

/** The log holds warnings of the database unavailable (with these causes among them), no internal error and no database address. */
function expectWarnings(log: string, databaseUrl: string, causes: string[]): void {
  const lines = log.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string; cause?: string; err?: unknown });
  const warnings = lines.filter((l) => l.msg === "database unavailable");
  expect(warnings.length).toBeGreaterThan(0);
  expect(warnings.every((w) => w.level === 40 && w.err === undefined)).toBe(true);
  for (const cause of causes) expect(warnings.map((w) => w.cause), log).toContain(cause);
  expect(lines.filter((l) => l.msg === "internal error")).toEqual([]);
  expect(log).not.toContain(databaseUrl.replace(/^sqlite:/, ""));
  expect(log).not.toMatch(/postgres:\/\//);
}

/** A token request over HTTP, answered as it comes. */
const tokenRequest = (url: string) =>
  fetch(`${url}/auth/v1/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret }),
  });

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.runIf(testDialect() === "postgres")("PostgreSQL", () => {
  it("contention: with every connection held by authorizations waiting on the subject and app's spend lock, the next requests are 503 UNAVAILABLE; a terminated backend too; then all is served", async () => {
    const POOL = 2;
    const logs = logCapture();
    const ts = await startTestServer({ DATABASE_POOL_SIZE: String(POOL), DATABASE_POOL_TIMEOUT_MS: "300", RATE_LIMIT: "off" }, logs.stream);
    const locker = new pg.Client({ connectionString: ts.databaseUrl });
    await locker.connect();
    try {
      const spend = spends(ts.admin);
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("contended");
      unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100") }));
      const body = { userId, appId, amount: money("1") };
            const first = unwrap(await spend.authorize(body)).authorization;

      await locker.query("begin");
      await locker.query("select spend_lock_subject_app($1, $2)", [userId, appId]);
      const waiting = Array.from({ length: POOL }, () => spend.authorize(body));
      const waitingPids = async () =>
        (
          await locker.query<{ pid: number }>(
            "select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid() order by pid",
          )
        ).rows.map((r) => r.pid);
      await until(async () => (await waitingPids()).length === POOL, "the authorizations to hold every connection");

      // No connection comes free within the pool's timeout: a write, a read, the token endpoint.
      const key = randomUUID();
      expectUnavailable(await spend.authorize(body, key), ts.databaseUrl);
      expectUnavailable(await spend.get(first.id), ts.databaseUrl);
      const token = await tokenRequest(ts.url);
      expect(token.status).toBe(503);
      expect(token.headers.get("retry-after")).toBe("1");
      expect(token.headers.get("cache-control")).toBe("no-store");
      expect(await token.json()).toMatchObject({ code: 14, details: [{ reason: "UNAVAILABLE" }, {}] });

      // A backend ended by an administrator while its authorization waits (57P01): nothing of it is kept.
      const [terminated] = await waitingPids();
      await locker.query("select pg_terminate_backend($1)", [terminated]);
      await locker.query("rollback");
      const answers = await Promise.all(waiting);
      expect(answers.map((a) => a.response.status).sort()).toEqual([200, 503]);
      for (const a of answers.filter((a) => a.response.status === 503)) expectUnavailable(a, ts.databaseUrl);

      // Served again: the refused key was never used, so its retry runs; the usage counts what was approved.
      const retried = unwrap(await spend.authorize(body, key)).authorization;
      expect(retried.decision.approved).toBe(true);
      expect(retried.decision.usage.held).toEqual(money("3"));
      expect(unwrap(await spend.get(first.id)).authorization.id).toBe(first.id);
      expect((await tokenRequest(ts.url)).status).toBe(200);
      expectWarnings(logs.text(), ts.databaseUrl, ["pool-timeout"]);
    } finally {
      await locker.end().catch(() => undefined);
      await ts.stop();
    }
  });

  it("down: a connection lost under a request, connections refused: 503 UNAVAILABLE (the token endpoint's too), /readyz says unavailable; served again once the database is back", async () => {
    const proxy = new TcpProxy();
    const logs = logCapture();
    const ts = await startTestServer({ DATABASE_POOL_TIMEOUT_MS: "2000", RATE_LIMIT: "off" }, logs.stream, { reachDatabase: (url) => proxy.start(url) });
    const locker = new pg.Client({ connectionString: ts.databaseUrl });
    await locker.connect();
    try {
      const admin = funds(ts.admin);
      const spend = spends(ts.admin);
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("down");
      unwrap(await admin.setLimit(userId, appId, { limit: amount("100") }));
      const body = { userId, appId, amount: money("1") };
      unwrap(await spend.authorize(body));
      expect(await (await fetch(`${ts.url}/readyz`)).json()).toEqual({ status: "ready" });

      // An authorization waits on the spend lock (the test's own connection, not through the proxy, holds it) when the connections are reset.
      await locker.query("begin");
      await locker.query("select spend_lock_subject_app($1, $2)", [userId, appId]);
      const inFlight = spend.authorize(body);
      await until(
        async () => (await locker.query("select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()")).rowCount === 1,
        "the authorization to wait on the spend lock",
      );
      await proxy.cut();
      expectUnavailable(await inFlight, ts.databaseUrl);
      await locker.query("rollback");

      expectUnavailable(await admin.policyGet(), ts.databaseUrl);
      expectUnavailable(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", timeZone: "Europe/Paris", defaultControls: null }, updateMask: "timeZone" }), ts.databaseUrl);
      const token = await tokenRequest(ts.url);
      expect(token.status).toBe(503);
      expect(token.headers.get("retry-after")).toBe("1");
      const tokenBody = (await token.json()) as Record<string, unknown>;
      expect(tokenBody).toMatchObject({ code: 14, details: [{ reason: "UNAVAILABLE" }, {}] });
      expect(tokenBody).not.toHaveProperty("error");
      const ready = await fetch(`${ts.url}/readyz`);
      expect([ready.status, await ready.json()]).toEqual([503, { status: "unavailable" }]);

      await proxy.restore();
      expect(unwrap(await admin.policyGet()).fundPolicy.currencyCode).toBe("USD");
      // The lost authorization kept nothing: one hold of 1 before it, this one now.
      expect(unwrap(await spend.authorize(body)).authorization.decision.usage.held).toEqual(money("2"));
      expect((await tokenRequest(ts.url)).status).toBe(200);
      expect((await fetch(`${ts.url}/readyz`)).status).toBe(200);
      expectWarnings(logs.text(), proxy.url, ["ECONNREFUSED"]);
    } finally {
      await locker.end().catch(() => undefined);
      await proxy.restore();
      await ts.stop();
      await proxy.close();
    }
  });

  it("a COMMIT whose answer is lost: 503 UNAVAILABLE, and the retry with the same Idempotency-Key replays the authorization committed, never a second one", async () => {
    const proxy = new TcpProxy();
    const ts = await startTestServer({ RATE_LIMIT: "off" }, undefined, { reachDatabase: (url) => proxy.start(url) });
    try {
      const spend = spends(ts.admin);
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("commit-lost");
      unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100") }));
      const body = { userId, appId, amount: money("1") };
      const key = randomUUID();

      const lost = proxy.loseNextCommitAnswer();
      expectUnavailable(await spend.authorize(body, key), ts.databaseUrl);
      await lost;

      const retried = await spend.authorize(body, key);
      expect(retried.response.headers.get("idempotent-replayed")).toBe("true");
      const { authorization } = unwrap(retried);
      expect(authorization.decision.usage.held).toEqual(money("1"));
      expect(unwrap(await spend.list({ user_id: userId, app_id: appId })).list.map((i) => i.authorization.id)).toEqual([authorization.id]);
    } finally {
      await ts.stop();
      await proxy.close();
    }
  });
});

describe.runIf(testDialect() === "sqlite")("SQLite", () => {
  it("another process holding the write lock past the busy timeout: a write is 503 UNAVAILABLE, a read 200; once released, the write succeeds", async () => {
    const logs = logCapture();
    const ts = await startTestServer({ SQLITE_BUSY_TIMEOUT_MS: "50" }, logs.stream);
    const other = new SQLite(ts.databaseUrl.replace(/^sqlite:/, ""));
    try {
      const admin = funds(ts.admin);
      const { userId } = await ts.userClient(["ROLE_USER"]);
      const appId = newAppId("busy");
      unwrap(await admin.setLimit(userId, appId, { limit: amount("100") }));

      other.exec("begin immediate");
      expectUnavailable(await admin.setLimit(userId, appId, { limit: amount("50") }), ts.databaseUrl);
      expectUnavailable(await spends(ts.admin).authorize({ userId, appId, amount: money("1") }), ts.databaseUrl);
      expect(unwrap(await admin.get(userId, appId)).limit).toMatchObject({ controls: { limit: amount("100") } });
      other.exec("rollback");

      expect(unwrap(await admin.setLimit(userId, appId, { limit: amount("50") })).limit).toMatchObject({ controls: { limit: amount("50") } });
      expectWarnings(logs.text(), ts.databaseUrl, ["SQLITE_BUSY"]);
    } finally {
      if (other.inTransaction) other.exec("rollback");
      other.close();
      await ts.stop();
    }
  });
});

/** The simple-query message of a COMMIT, as node-postgres sends it (Kysely's `commit`, no parameters). */
const COMMIT = Buffer.from("commit\0");

/**
 * A TCP proxy to the database that the test can cut (every connection reset, new ones refused) and
 * restore on the same port, or have lose the answer to the next COMMIT (the database commits, the
 * server sees its connection reset).
 */
class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private port = 0;
  private target = { host: "", port: 0 };
  private commitTrap: (() => void) | undefined;
  url = "";

  /** Listens, and answers `databaseUrl` as reached through the proxy. */
  async start(databaseUrl: string): Promise<string> {
    const url = new URL(databaseUrl);
    this.target = { host: url.hostname, port: Number(url.port || 5432) };
    this.server = await this.listen(0);
    this.port = (this.server.address() as { port: number }).port;
    url.hostname = "127.0.0.1";
    url.port = String(this.port);
    this.url = url.toString();
    return this.url;
  }

  private async listen(port: number): Promise<Server> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("error", () => undefined);
        s.on("close", () => {
          this.sockets.delete(s);
          client.destroy();
          upstream.destroy();
        });
      }
      let committed: (() => void) | undefined;
      client.on("data", (chunk: Buffer) => {
        upstream.write(chunk);
        if (this.commitTrap && chunk.includes(COMMIT)) [committed, this.commitTrap] = [this.commitTrap, undefined];
      });
      upstream.on("data", (chunk: Buffer) => {
        if (!committed) return void client.write(chunk);
        // The database answered the COMMIT: it is durable. The server never learns it.
        client.resetAndDestroy();
        upstream.destroy();
        committed();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    return server;
  }

  /** Resolves once the next COMMIT has been committed by the database and its connection reset before the answer. */
  loseNextCommitAnswer(): Promise<void> {
    return new Promise((resolve) => (this.commitTrap = resolve));
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.resetAndDestroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  async restore(): Promise<void> {
    if (this.server) return;
    this.server = await this.listen(this.port);
  }

  async close(): Promise<void> {
    await this.cut();
  }
}
