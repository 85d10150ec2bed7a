// The floor server of one database in a bench run (issue 33): started like the server under test
// (compiled, its own log), on a file of its own beside the server's (SQLite) or a schema of its own
// in the server's database (PostgreSQL), and seeded by the bench with the server's ids and amounts,
// so that the load generator sends both the very same requests.
import { join } from "node:path";
import type { BenchDatabase } from "./database.js";
import { freePort, ROOT, startNode, type NodeProcess } from "./processes.js";
import { openFloorStore } from "./servers/floor-open.js";
import type { FloorStore } from "./servers/floor-store.js";
import { spendLimits, type Authorizations } from "./spends.js";

const NANOS = 1_000_000_000n;

export interface Floor {
  server: NodeProcess;
  /** Copies the spender's limits to the floor (the fund's currency, USD, with them). */
  seedSpends(spender: string): Promise<void>;
  /** Copies a webhook listener's path and secret to the floor. */
  seedListener(path: string, secret: string): Promise<void>;
  /** The floor's authorizations of the spender, for its capture scenario. */
  authorizations(spender: string): Authorizations;
  stop(): Promise<void>;
}

export async function startFloor(database: BenchDatabase, workDir: string, nodeArgs: string[] = []): Promise<Floor> {
  const url = database.dialect === "sqlite" ? `sqlite:${join(workDir, "floor.sqlite")}` : database.url;
  // Opened here first: it makes the floor's tables (and functions) the server then finds, and seeds them.
  const store: FloorStore = await openFloorStore(url);
  const port = await freePort();
  const server = await startNode({
    script: join(ROOT, "dist/bench/servers/floor.js"),
    env: { HOST: "127.0.0.1", NODE_ENV: "production", FLOOR_DATABASE_URL: url },
    port,
    probePath: "/",
    logFile: join(workDir, `floor-${database.dialect}.log`),
    nodeArgs,
  }).catch(async (e: unknown) => {
    await store.close();
    throw e;
  });
  return {
    server,
    seedSpends: (spender) => store.seed({ currencyCode: "USD", limits: spendLimits().map((l) => ({ userId: spender, appId: l.appId, limitNanos: l.units * NANOS })) }),
    seedListener: (path, secret) => store.seed({ currencyCode: "USD", listeners: [{ path, listenerId: path.split("/").pop() ?? path, secret }] }),
    authorizations: (spender) => ({ inState: (state, count) => store.inState(spender, "spend-", state, count), origin: server.url, headers: { "Content-Type": "application/json" } }),
    stop: async () => {
      await server.stop();
      await store.close();
    },
  };
}
