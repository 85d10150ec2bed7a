// A TCP proxy between a test's server and its database, to make the network fail for real: cut
// (connections reset, new ones refused), frozen (connections kept open, nothing passes), or an
// answer lost (the database commits, the server never hears it).
import { createServer, connect, type Server, type Socket } from "node:net";

/** A COMMIT as Kysely sends it: a simple query. */
export const COMMIT = /^commit$/i;

/** SSLRequest's and GSSENCRequest's codes: sent before the startup message, which follows either. */
const ENCRYPTION_REQUESTS = [80877103, 80877104];

/**
 * Reads what a client sends (PostgreSQL's frontend protocol, version 3) and calls `run` with the
 * text of each statement it asks to run: a simple query's, and at each Bind that of the statement
 * bound (node-postgres sends a named statement's text once per connection, then only its name).
 */
function statementsSent(run: (text: string) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  let started = false;
  const texts = new Map<string, string>();
  const cstrings = (body: Buffer): string[] => body.toString("utf8").split("\0");
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      // The startup message (and an encryption request before it) has no type byte.
      const head = started ? 1 : 0;
      if (pending.length < head + 4) return;
      const end = head + pending.readInt32BE(head);
      if (pending.length < end) return;
      const type = started ? String.fromCharCode(pending[0]!) : "";
      const body = pending.subarray(head + 4, end);
      pending = pending.subarray(end);
      if (!started) started = !ENCRYPTION_REQUESTS.includes(body.readInt32BE(0));
      else if (type === "Q") run(cstrings(body)[0]!);
      else if (type === "P") {
        const [name, text] = cstrings(body);
        texts.set(name!, text!);
      } else if (type === "B") run(texts.get(cstrings(body)[1]!) ?? "");
    }
  };
}

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
 * to the next statement of a kind (the database has run it, the server sees its connection reset).
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<Pair>();
  private frozen = false;
  private port = 0;
  private target = { host: "", port: 0 };
  private trap: { statement: RegExp; lost: () => void } | undefined;
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
      let lost: (() => void) | undefined;
      const read = statementsSent((text) => {
        if (!this.trap?.statement.test(text)) return;
        [lost, this.trap] = [this.trap.lost, undefined];
      });
      // Read and dropped while frozen: the peer's writes succeed, no answer comes.
      client.on("data", (chunk: Buffer) => {
        if (pair.frozen) return;
        pair.upstream?.write(chunk);
        read(chunk);
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
        if (!lost) return void client.write(chunk);
        // The database answered: the statement ran (a COMMIT, or a statement in autocommit, is
        // durable: PostgreSQL sends a small answer at the statement's Sync, after the commit). The
        // server never learns it.
        client.resetAndDestroy();
        upstream.destroy();
        lost();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    return server;
  }

  /**
   * Resolves once the database has answered the next statement whose text matches `statement` (sent
   * from now on, on any connection) and that connection was reset before the answer passed.
   */
  loseNextAnswerTo(statement: RegExp): Promise<void> {
    return new Promise((resolve) => (this.trap = { statement, lost: resolve }));
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
