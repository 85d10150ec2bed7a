// The HTTP server's connections through a shutdown (server.ts `close`). HTTP/1.1 cannot tell a client
// that an idle kept connection is about to close, so once closing every answer carries `Connection:
// close`, and once the listener has stopped an idle connection is half-closed (FIN, not a reset)
// unless a request is arriving on it. Node's `server.close()` is not used: it destroys idle connections
// at once (closeIdleConnections), resetting one on which a request is arriving. docs/operating.md,
// "Shutdown".
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import { Server as NetServer, type Socket } from "node:net";

/** How long a half-closed connection waits for its client's FIN before it is destroyed. */
const LINGER_MS = 2_000;

interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  startedAt: number;
}

interface Connection {
  socket: Socket;
  /** Under way, in the order of their requests (the order of their answers). */
  exchanges: Exchange[];
  /** `socket.bytesRead` when its last exchange ended: bytes since are a request arriving. */
  quietAt: number;
  /** An answer with `Connection: close` is due on it: no later request is run. */
  closingAfter: boolean;
}

/** A request under way, as the log names it when a shutdown cuts it. */
export interface UnfinishedRequest {
  requestId: string | undefined;
  method: string | undefined;
  /** Without the query string, as the access log. */
  path: string;
  ms: number;
  /** Whether its body had arrived whole (a slow upload has not). */
  bodyComplete: boolean;
}

export class Connections {
  readonly server: Server;
  private readonly open = new Map<Socket, Connection>();
  private closing = false;
  private stopped = false;

  constructor(app: RequestListener) {
    this.server = createServer((req, res) => {
      if (this.admit(req, res)) app(req, res);
    });
    this.server.on("connection", (socket: Socket) => {
      this.open.set(socket, { socket, exchanges: [], quietAt: 0, closingAfter: false });
      socket.once("close", () => this.open.delete(socket));
    });
  }

  /** From now on, every connection is closed after its next answer. */
  closeAfterAnswers(): void {
    this.closing = true;
    for (const connection of this.open.values()) {
      const last = connection.exchanges.at(-1);
      if (last) this.closeAfter(connection, last.res);
    }
  }

  /** Stops accepting connections, closes the idle ones, and resolves once every connection is closed. */
  stop(): Promise<void> {
    this.closeAfterAnswers();
    this.stopped = true;
    const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(this.server, () => resolve()));
    for (const connection of this.open.values()) this.closeIfIdle(connection);
    return closed;
  }

  /** The requests under way, and how many connections have a request arriving (its headers incomplete). */
  unfinished(): { requests: UnfinishedRequest[]; arriving: number } {
    const now = performance.now();
    const connections = [...this.open.values()];
    return {
      requests: connections.flatMap((c) =>
        c.exchanges.map(({ req, res, startedAt }) => ({
          requestId: res.getHeader("x-request-id")?.toString(),
          method: req.method,
          // Express rewrites `url` inside a mounted router; `originalUrl` is the request's.
          path: ((req as { originalUrl?: string }).originalUrl ?? req.url ?? "").split("?")[0] ?? "",
          ms: Math.round(now - startedAt),
          bodyComplete: req.complete,
        })),
      ),
      arriving: connections.filter((c) => c.exchanges.length === 0 && c.socket.bytesRead !== c.quietAt).length,
    };
  }

  /** Whether to run the request: not behind an answer that closes its connection, nor on a connection closed as idle. */
  private admit(req: IncomingMessage, res: ServerResponse): boolean {
    const connection = this.open.get(req.socket);
    if (!connection) return true;
    if (connection.closingAfter || req.socket.writableEnded) return false;
    const exchange = { req, res, startedAt: performance.now() };
    connection.exchanges.push(exchange);
    if (this.closing) this.closeAfter(connection, res);
    // Over once answered and its body read (Node reads what the app left of it after the answer).
    let parts = 2;
    const ended = () => {
      if (--parts > 0) return;
      connection.exchanges.splice(connection.exchanges.indexOf(exchange), 1);
      if (connection.exchanges.length > 0) return;
      connection.quietAt = connection.socket.bytesRead;
      if (this.stopped) this.closeIfIdle(connection);
    };
    res.once("close", ended);
    req.once("close", ended);
    return true;
  }

  private closeAfter(connection: Connection, res: ServerResponse): void {
    // An answer already begun keeps its connection: closed as idle once the listener stops.
    if (res.headersSent) return;
    res.setHeader("Connection", "close");
    connection.closingAfter = true;
  }

  private closeIfIdle(connection: Connection): void {
    const { socket } = connection;
    const idle = () => connection.exchanges.length === 0 && socket.bytesRead === connection.quietAt && !socket.writableEnded && !socket.destroyed;
    if (!idle()) return;
    // Bytes that reached the socket are read in the event loop's poll phase: look again after it.
    setImmediate(() => {
      if (!idle()) return;
      socket.end();
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    });
  }
}
