// `npm start`: serve the API with the configuration from the environment until SIGTERM or SIGINT,
// then shut down gracefully (server.ts `close`) within SHUTDOWN_TIMEOUT_SECONDS; a second signal
// exits at once. Exit code 0 after a complete shutdown, 1 when it was cut short, 2 when the
// configuration, the database or the key is refused at start. Every line on stdout is a JSON log
// line: what the start says is fields of one, and a generated bootstrap credential goes to a file
// of its own, never to the log stream (identity/bootstrap.ts).
import { runCommand } from "./commands/run-command.js";
import { exitRefused, loadStartConfig } from "./config.js";
import { limitHeapGrowth } from "./core/heap-growth.js";
import { createLogger } from "./core/logger.js";
import { startServer } from "./server.js";

/** A signal this soon after the first is the first delivered twice, not a second one. */
const REPEATED_SIGNAL_MS = 1_000;

async function main(): Promise<void> {
  const config = await loadStartConfig().catch(exitRefused);
  limitHeapGrowth(config.heapGrowthPercent);
  const logger = createLogger(config.logLevel);
  const server = await startServer({ config, logger }).catch(exitRefused);
  logger.info({
    msg: "listening",
    // What the socket is bound to (0.0.0.0: every address of the machine), and a URL that reaches it from here.
    listening: server.listening,
    url: server.url,
    ...(server.urls ? { urls: server.urls } : {}),
    baseUrl: config.baseUrl,
    docs: `${server.url}/docs`,
    contract: `${server.url}/openapi.yaml`,
    ...(server.metricsUrl ? { metrics: { listening: server.metricsListening, url: server.metricsUrl } } : {}),
    // The kind alone for PostgreSQL: its URL may hold a password.
    database: config.database.kind === "sqlite" ? { kind: "sqlite", path: config.database.path } : { kind: "postgres" },
  });
  const { drainSeconds, timeoutSeconds } = config.shutdown;
  let stoppingSince: number | undefined;
  // Whatever is unfinished is cut: the process exits, and the database rolls back what it had not
  // committed (a connection closed mid-transaction; SQLite's uncommitted pages). Runs cut hold their
  // leases: another instance resumes them when the leases lapse.
  const cut = (msg: string, fields: Record<string, unknown>) => {
    logger.error({ msg, ...fields, ...server.unfinished() });
    process.exit(1);
  };
  const stop = (signal: NodeJS.Signals) => {
    if (stoppingSince !== undefined) {
      // A terminal's Ctrl-C reaches both npm and the server, and npm forwards it too: the same signal twice.
      const sinceFirstMs = Math.round(performance.now() - stoppingSince);
      if (sinceFirstMs < REPEATED_SIGNAL_MS) return;
      return cut("second signal: exiting at once", { signal, sinceFirstMs });
    }
    const since = performance.now();
    stoppingSince = since;
    logger.info({ msg: "shutting down", signal, drainSeconds, timeoutSeconds });
    setTimeout(() => cut("shutdown timed out: exiting with work unfinished", { timeoutSeconds }), timeoutSeconds * 1000);
    server.close(drainSeconds * 1000).then(
      () => {
        logger.info({ msg: "shut down", ms: Math.round(performance.now() - since) });
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ msg: "shutdown failed", err });
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

runCommand("failed to start", main);
