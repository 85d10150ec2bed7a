// The metrics' own HTTP listener (node:http, apart from the API's): `GET /metrics` answers the
// registry's text, anything else 404. It holds no secret and takes no credential: bind it where only
// the scraper reaches (METRICS_HOST, 127.0.0.1 by default).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { boundAddress, listenOn } from "../core/listen-address.js";
import type { Logger } from "../core/logger.js";
import { METRICS_CONNECTIONS, reportRefusedConnections, type RefusedConnectionsObserver } from "../http/refused-connections.js";
import { exposition } from "./exposition.js";

export interface MetricsListener {
  /** e.g. http://127.0.0.1:9464/metrics, from this machine */
  url: string;
  /** The address and port it listens on, e.g. 0.0.0.0:9464. */
  listening: string;
  /** Stops listening and closes its connections, a scraper's kept one included: a shutdown never waits for it. */
  close(): Promise<void>;
}

/** `refusals`: told of the connections refused past METRICS_CONNECTIONS or for want of file descriptors (logged with `logger`). */
export async function listenForScrapes(registry: Registry, port: number, host: string, logger: Logger, refusals: RefusedConnectionsObserver): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" }).end("not found\n");
      return;
    }
    exposition(registry, req.headers.accept).then(
      ({ contentType, body }) => res.writeHead(200, { "Content-Type": contentType }).end(body),
      () => res.writeHead(500, { "Content-Type": "text/plain; charset=utf-8" }).end("the metrics could not be collected\n"),
    );
  });
  await listenOn(server, port, host, { port: "METRICS_PORT", host: "METRICS_HOST" });
  reportRefusedConnections(server, "metrics", METRICS_CONNECTIONS, logger, refusals);
  const { url, listening } = boundAddress(server.address() as AddressInfo);
  return {
    url: `${url}/metrics`,
    listening,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
