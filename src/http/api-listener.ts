// The API's HTTP listener: the server settings that clients and balancers rely on, the parser's
// refusals answered with the contract's error body (./client-error.ts), and connections capped
// below the open-file limit (./refused-connections.ts). Answers once it listens, or fails (a port taken).
import type { RequestListener } from "node:http";
import { listenOn } from "../core/listen-address.js";
import type { Logger } from "../core/logger.js";
import { answerClientErrors, type ParserRefusals } from "./client-error.js";
import { Connections } from "./connections.js";
import { apiConnectionCap, openFileLimit, reportRefusedConnections, type RefusedConnectionsObserver } from "./refused-connections.js";

export interface ApiListenerOptions {
  port: number;
  host: string;
  logger: Logger;
  /** The database connections the process keeps open (its pool): the API's connections leave them their files. */
  databaseConnections: number;
  parserRefused?: ParserRefusals;
  refusedConnections?: RefusedConnectionsObserver;
}

export async function listenApi(app: RequestListener, options: ApiListenerOptions): Promise<Connections> {
  const connections = new Connections(app);
  const { server } = connections;
  answerClientErrors(server, options.logger, options.parserRefused);
  // Idle keep-alive connections are closed by the client or the load balancer first (their idle
  // timeouts are shorter: undici 4 s, common balancers 60 s): a server that closes first races a
  // request being sent on the same connection, which the client sees as ECONNRESET.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // The whole request, body included (Node's default, stated: the contract names it for 408).
  server.requestTimeout = 300_000;
  // Every header field is kept, none dropped past a count; limitHeaderFields refuses too many.
  server.maxHeadersCount = 0;
  await listenOn(server, options.port, options.host, { port: "PORT", host: "HOST" });
  reportRefusedConnections(server, "api", apiConnectionCap(openFileLimit(), options.databaseConnections), options.logger, options.refusedConnections);
  return connections;
}
