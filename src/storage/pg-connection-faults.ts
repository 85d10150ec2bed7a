// PostgreSQL: connections that stop answering are closed rather than kept. node-postgres fails a
// query unanswered past query_timeout but gives its connection back to the pool still waiting,
// where every later query would wait out the timeout again. Here a connection lost under a query
// fails the rest of its checkout at once and is closed when released; those kept idle since before
// such a loss are closed as they come out of the pool; a failure to open one is marked as such
// (unavailable.ts). docs/operating.md, "Database faults and readiness".
import type pg from "pg";
import { timeoutOf, type DatabaseObserver } from "./database-observer.js";
import { connectionLost, openingFailed } from "./unavailable.js";

/** What the layer above uses of a checked-out client. */
export interface Connection {
  query: pg.PoolClient["query"];
  release(): void;
}

export interface Connections {
  connect(): Promise<Connection>;
  end(): Promise<void>;
}

interface Guarded extends Connection {
  /** The count of connection losses when this connection was opened. */
  readonly openedAt: number;
}

/** `observer`: told of each statement that met a timeout (this sees every query's failure). */
export function closingLostConnections(pool: pg.Pool, observer?: DatabaseObserver): Connections {
  let losses = 0;
  const guards = new WeakMap<pg.PoolClient, Guarded>();

  const guard = (client: pg.PoolClient): Guarded => {
    let lost: unknown;
    const noticed = (error: unknown) => {
      const timeout = observer ? timeoutOf(error) : undefined;
      if (timeout) observer?.timedOut(timeout);
      if (lost === undefined && connectionLost(error)) {
        lost = error;
        losses++;
      }
    };
    const query = ((...args: Parameters<pg.PoolClient["query"]>) => {
      if (lost !== undefined) return Promise.reject(lost);
      const result = (client.query as (...a: unknown[]) => unknown)(...args);
      if (result instanceof Promise) result.catch(noticed);
      return result;
    }) as pg.PoolClient["query"];
    // pg-pool closes a client released with an error instead of keeping it.
    return { openedAt: losses, query, release: () => client.release(lost as Error | undefined) };
  };

  return {
    async connect() {
      for (;;) {
        let client: pg.PoolClient;
        try {
          client = await pool.connect();
        } catch (error) {
          throw openingFailed(error);
        }
        let guarded = guards.get(client);
        if (!guarded) {
          guarded = guard(client);
          guards.set(client, guarded);
        } else if (guarded.openedAt < losses) {
          client.release(new Error("opened before a connection was lost"));
          continue;
        }
        return guarded;
      }
    },
    end: () => pool.end(),
  };
}
