// A TCP proxy between a test's server and its database, to make the network fail for real: cut
// (connections reset, new ones refused), frozen (connections kept open, nothing passes), or an
// answer lost (the database commits, the server never hears it).
import { createServer, connect, type Server, type Socket } from "node:net";

/** The simple-query message of a COMMIT, as node-postgres sends it (Kysely's `commit`, no parameters). */
const COMMIT = Buffer.from("commit\0");

/** A client's connection through the proxy and its upstream; `frozen`: nothing passes either way, and neither end learns it. */
interface Pair {
  client: Socket;
  upstream?: Socket;
  frozen: boolean;
}

/**
 * A TCP proxy to the database that the test can cut (every connection reset, new ones refused) and
 * restore on the same port; freeze (every connection, open or new, accepted and kept open but
 * nothing passes either way, as when a host dies or a network drops everything) and heal (new
 * connections go through, the frozen ones stay frozen, as after a failover); or have lose the answer
 * to the next COMMIT (the database commits, the server sees its connection reset).
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<Pair>();
  private frozen = false;
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

  private track(s: Socket): void {
    this.sockets.add(s);
    s.on("error", () => undefined);
  }

  private async listen(port: number): Promise<Server> {
    const server = createServer((client) => {
      this.track(client);
      const pair: Pair = { client, frozen: this.frozen };
      this.pairs.add(pair);
      let committed: (() => void) | undefined;
      // Read and dropped while frozen: the peer's writes succeed, no answer comes.
      client.on("data", (chunk: Buffer) => {
        if (pair.frozen) return;
        pair.upstream?.write(chunk);
        if (this.commitTrap && chunk.includes(COMMIT)) [committed, this.commitTrap] = [this.commitTrap, undefined];
      });
      if (pair.frozen) return;
      const upstream = connect(this.target.port, this.target.host);
      pair.upstream = upstream;
      this.track(upstream);
      for (const s of [client, upstream]) {
        s.on("close", () => {
          this.sockets.delete(s);
          // A frozen connection's end does not reach the other side.
          if (pair.frozen) return;
          client.destroy();
          upstream.destroy();
        });
      }
      upstream.on("data", (chunk: Buffer) => {
        if (pair.frozen) return;
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

  /** Every connection, open or opened from now, passes nothing until the proxy closes. */
  freeze(): void {
    this.frozen = true;
    for (const pair of this.pairs) pair.frozen = true;
  }

  /** New connections go through again; the frozen ones stay frozen. */
  heal(): void {
    this.frozen = false;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
    this.pairs.clear();
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
