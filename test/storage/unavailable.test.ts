// Which failures are the database unavailable for the moment (503 UNAVAILABLE, a retry can succeed)
// and which stay faults of the server (500 INTERNAL). The errors node-postgres and better-sqlite3
// really throw are provoked where it takes no database server: a refused connection, a server that
// never answers (the connection's and the pool's timeouts), a write lock held by another connection.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { ApiError, GrpcCode } from "../../src/core/errors.js";
import { toApiError } from "../../src/http/to-api-error.js";
import { connectionLost, databaseUnavailable, openingFailed } from "../../src/storage/unavailable.js";
import { freePort } from "../support/process.js";

const caught = async (run: () => Promise<unknown>): Promise<unknown> => {
  try {
    await run();
  } catch (e) {
    return e;
  }
  throw new Error("expected a failure");
};

const coded = (code: string, message = "x") => Object.assign(new Error(message), { code });

describe("node-postgres and better-sqlite3, for real", () => {
  let silent: Server | undefined;
  const sockets: Socket[] = [];
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => (silent ? silent.close(resolve) : resolve(undefined)));
  });

  it("a refused connection", async () => {
    const port = await freePort();
    const error = await caught(async () => {
      const client = new pg.Client({ host: "127.0.0.1", port, user: "postgres", password: "a-secret-password", database: "x" });
      await client.connect();
    });
    expect(databaseUnavailable(error)).toBe("ECONNREFUSED");
  });

  it("a server that never answers: the connection's timeout, and the pool's wait for a connection", async () => {
    silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent!.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as { port: number }).port;
    const pool = new pg.Pool({ host: "127.0.0.1", port, user: "postgres", database: "x", max: 1, connectionTimeoutMillis: 200 });
    pool.on("error", () => undefined);
    const [opening, waiting] = await Promise.all([caught(() => pool.query("select 1")), caught(() => pool.query("select 1"))]);
    expect([databaseUnavailable(opening), databaseUnavailable(waiting)].sort()).toEqual(["connect-timeout", "pool-timeout"]);
    await pool.end();
  });

  it("a write lock held by another connection past busy_timeout", () => {
    const dir = mkdtempSync(join(tmpdir(), "unavailable-"));
    const holder = new SQLite(join(dir, "db.sqlite"));
    holder.pragma("journal_mode = WAL");
    holder.exec("create table t (x integer)");
    const waiter = new SQLite(join(dir, "db.sqlite"));
    waiter.pragma("busy_timeout = 10");
    holder.exec("begin immediate");
    try {
      let error: unknown;
      try {
        waiter.exec("begin immediate");
      } catch (e) {
        error = e;
      }
      expect(databaseUnavailable(error)).toBe("SQLITE_BUSY");
      // Reads go on beside the writer (WAL).
      expect(waiter.prepare("select count(*) as n from t").get()).toEqual({ n: 0 });
    } finally {
      holder.exec("rollback");
      holder.close();
      waiter.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the classification", () => {
  it.each([
    ["timeout exceeded when trying to connect", "pool-timeout"],
    ["Connection terminated due to connection timeout", "connect-timeout"],
    ["Connection terminated unexpectedly", "connection-terminated"],
    ["Connection terminated", "connection-terminated"],
    ["Client has encountered a connection error and is not queryable", "connection-error"],
    ["Query read timeout", "query-timeout"],
  ])("node-postgres's %j is unavailable", (message, label) => {
    expect(databaseUnavailable(new Error(message))).toBe(label);
  });

  it.each(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE"])("a connection failure %s is unavailable", (code) => {
    expect(databaseUnavailable(coded(code, `connect ${code} 10.0.0.1:5432`))).toBe(code);
  });

  it.each(["08000", "08003", "08006", "08001", "08004", "08P01", "53300", "57P01", "57P02", "57P03", "55P03", "57014", "40P01", "40001"])("SQLSTATE %s is unavailable", (state) => {
    expect(databaseUnavailable(coded(state))).toBe(`sqlstate ${state}`);
  });

  it("SQLSTATE 55000 is unavailable when opening a connection failed with it (the database accepts none), a fault anywhere else", () => {
    expect(databaseUnavailable(openingFailed(coded("55000", 'database "x" is not currently accepting connections')))).toBe("sqlstate 55000");
    expect(databaseUnavailable(coded("55000", 'currval of sequence "s" is not yet defined in this session'))).toBeUndefined();
    expect(databaseUnavailable(openingFailed(coded("23505")))).toBeUndefined();
  });

  it.each([
    ["a reset", coded("ECONNRESET"), true],
    ["the query timeout", new Error("Query read timeout"), true],
    ["a terminated session", coded("57P01"), true],
    ["a connection exception", coded("08006"), true],
    ["the pool's wait for a connection", new Error("timeout exceeded when trying to connect"), false],
    ["statement_timeout", coded("57014"), false],
    ["lock_timeout", coded("55P03"), false],
    ["a deadlock", coded("40P01"), false],
    ["SQLite busy", coded("SQLITE_BUSY"), false],
    ["a constraint", coded("23505"), false],
  ])("%s: the connection is lost, %s", (_name, error, lost) => {
    expect(connectionLost(error)).toBe(lost);
  });

  it.each(["SQLITE_BUSY", "SQLITE_BUSY_TIMEOUT", "SQLITE_LOCKED"])("%s is unavailable", (code) => {
    expect(databaseUnavailable(coded(code))).toBe(code);
  });

  it("a refused connection to every address of a name (Node's AggregateError) is unavailable; one failure of another kind among them is not", () => {
    const refused = Object.assign(new AggregateError([coded("ECONNREFUSED"), coded("ECONNREFUSED")]), { code: "ECONNREFUSED" });
    expect(databaseUnavailable(refused)).toBe("ECONNREFUSED");
    expect(databaseUnavailable(new AggregateError([coded("ECONNREFUSED"), new TypeError("x")]))).toBeUndefined();
  });

  it.each([
    ["unique_violation", coded("23505")],
    ["undefined_table", coded("42P01")],
    ["disk_full", coded("53100")],
    ["out_of_memory", coded("53200")],
    ["object_not_in_prerequisite_state met by a query", coded("55000")],
    ["invalid_password", coded("28P01", 'password authentication failed for user "postgres"')],
    ["a constraint of SQLite", coded("SQLITE_CONSTRAINT_UNIQUE")],
    ["a corrupt SQLite file", coded("SQLITE_CORRUPT")],
    ["a read-only SQLite file", coded("SQLITE_READONLY")],
    ["a bug", new TypeError("Cannot read properties of undefined")],
    ["a message that only mentions a timeout", new Error("timeout")],
    ["node-postgres's message with a code of another kind", coded("XX000", "Connection terminated unexpectedly")],
    ["an error of the API", new ApiError(409, GrpcCode.ABORTED, "IDEMPOTENCY_KEY_IN_USE", "x")],
    ["a string", "ECONNREFUSED"],
    ["null", null],
  ])("%s stays a fault", (_name, error) => {
    expect(databaseUnavailable(error)).toBeUndefined();
  });
});

describe("the answer", () => {
  it("unavailable: 503 UNAVAILABLE (gRPC 14) with Retry-After, not internal, the cause's label without its message", () => {
    const translated = toApiError(coded("ECONNREFUSED", "connect ECONNREFUSED 10.1.2.3:5432"));
    expect(translated).toEqual({ error: expect.any(ApiError), internal: false, unavailable: "ECONNREFUSED" });
    expect(translated.error).toMatchObject({ status: 503, code: 14, reason: "UNAVAILABLE", headers: { "Retry-After": "1" } });
    expect(translated.error.message).not.toContain("10.1.2.3");
  });

  it("anything else: 500 INTERNAL, internal", () => {
    const translated = toApiError(coded("23505"));
    expect(translated).toEqual({ error: expect.any(ApiError), internal: true });
    expect(translated.error).toMatchObject({ status: 500, code: 13, reason: "INTERNAL" });
  });
});
