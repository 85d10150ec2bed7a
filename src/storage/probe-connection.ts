// PostgreSQL: a connection of its own for the reachability check (./reachability.ts, /readyz),
// apart from the pool. Readiness asks whether the database answers, not whether a connection of
// the pool is free: a pool whose every connection waits for a table someone locked, or serves a
// burst, must not take the instance out of rotation, as it would every instance at once. The
// connection is opened at the first ping and opened anew after any failure, so that one lost or
// left unanswered (a ping past its deadline) is never asked again.
import pg from "pg";
import { openingFailed } from "./unavailable.js";

export interface ProbeOptions {
  url: string;
  /** How long opening the connection may take. */
  connectTimeoutMs: number;
  keepAliveMs: number;
}

export class ProbeConnection {
  private client: pg.Client | undefined;

  constructor(private readonly options: ProbeOptions) {}

  /** `select 1` on the probe's connection (opened first if it is not); one at a time (the reachability check joins its pings). */
  async ping(): Promise<void> {
    try {
      const client = this.client ?? (this.client = await this.open());
      await client.query("select 1");
    } catch (e) {
      this.drop();
      throw e;
    }
  }

  /** Forgets the connection (a ping that lost its race with the deadline): the next ping opens another. */
  drop(): void {
    const client = this.client;
    this.client = undefined;
    void client?.end().catch(() => undefined);
  }

  private async open(): Promise<pg.Client> {
    const { url, connectTimeoutMs, keepAliveMs } = this.options;
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs, keepAlive: keepAliveMs > 0, keepAliveInitialDelayMillis: keepAliveMs, application_name: "tenant-api readiness" });
    // A connection lost while idle fails the next ping, which opens another.
    client.on("error", () => undefined);
    try {
      await client.connect();
    } catch (e) {
      void client.end().catch(() => undefined);
      throw openingFailed(e);
    }
    return client;
  }
}
