// PostgreSQL, for real: a connection that goes silent (the test's proxy keeps it open and lets
// nothing through) fails its query at the query timeout, the rest of its checkout at once, and is
// closed; the connections kept idle since before it are closed as they come out of the pool, so the
// first query once new connections go through gets a new one and its answer at once. A 55000 is
// the database unavailable when it refuses to open a connection (ALLOW_CONNECTIONS false), and a
// fault when a query meets it.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createScratchDatabase, withAdminClient, type ScratchDatabase } from "../../scripts/scratch-database.js";
import { closingLostConnections } from "../../src/storage/pg-connection-faults.js";
import { databaseUnavailable } from "../../src/storage/unavailable.js";
import { POSTGRES_ADMIN_URL, testDialect } from "../support/database.js";
import { TcpProxy } from "../support/tcp-proxy.js";

const failure = (promise: Promise<unknown>): Promise<unknown> => promise.then(
  () => {
    throw new Error("expected a failure");
  },
  (e: unknown) => e,
);

describe.skipIf(testDialect() !== "postgres")("connections that fail (PostgreSQL)", () => {
  let database: ScratchDatabase;
  beforeAll(async () => {
    database = await createScratchDatabase(POSTGRES_ADMIN_URL, "tenant_test");
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("a silent connection: its query fails at the query timeout, the rest of its checkout at once; it and those idle since before are closed", async () => {
    const proxy = new TcpProxy();
    const pool = new pg.Pool({ connectionString: await proxy.start(database.url), max: 3, query_timeout: 500, connectionTimeoutMillis: 1_000 });
    pool.on("error", () => undefined);
    const connections = closingLostConnections(pool);
    try {
      const opened = await Promise.all([1, 2, 3].map(() => connections.connect()));
      for (const c of opened) await c.query("select 1");
      for (const c of opened) c.release();
      expect(pool.idleCount).toBe(3);

      proxy.freeze();
      const silent = await connections.connect();
      const started = performance.now();
      const timedOut = await failure(silent.query("select 1"));
      expect(databaseUnavailable(timedOut)).toBe("query-timeout");
      expect(performance.now() - started).toBeLessThan(2_000);
      // A transaction's ROLLBACK would wait as long again: it fails at once.
      const rollingBack = performance.now();
      expect(await failure(silent.query("rollback"))).toBe(timedOut);
      expect(performance.now() - rollingBack).toBeLessThan(100);
      silent.release();
      expect(pool.totalCount).toBe(2);

      proxy.heal();
      const next = await connections.connect();
      const asked = performance.now();
      expect((await next.query("select 1 as ok")).rows).toEqual([{ ok: 1 }]);
      expect(performance.now() - asked).toBeLessThan(400);
      next.release();
      expect(pool.totalCount).toBe(1);
    } finally {
      await pool.end();
      await proxy.close();
    }
  });

  it("SQLSTATE 55000: unavailable when the database refuses to open a connection, a fault when a query meets it", async () => {
    const name = new URL(database.url).pathname.slice(1);
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    pool.on("error", () => undefined);
    const connections = closingLostConnections(pool);
    try {
      const client = await connections.connect();
      await client.query("create temporary sequence never_used");
      const inQuery = await failure(client.query("select currval('never_used')"));
      client.release();
      expect(inQuery).toMatchObject({ code: "55000" });
      expect(databaseUnavailable(inQuery)).toBeUndefined();

      await withAdminClient(POSTGRES_ADMIN_URL, async (admin) => {
        await admin.query(`alter database ${name} allow_connections false`);
        await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1", [name]);
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const refused = await failure(connections.connect());
      expect(refused).toMatchObject({ code: "55000" });
      expect(databaseUnavailable(refused)).toBe("sqlstate 55000");
    } finally {
      await withAdminClient(POSTGRES_ADMIN_URL, (admin) => admin.query(`alter database ${name} allow_connections true`));
      await pool.end();
    }
  });
});
