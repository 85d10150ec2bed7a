// `npm start`: serve the API with the configuration from the environment until SIGTERM or SIGINT,
// then shut down gracefully (server.ts `close`) within SHUTDOWN_TIMEOUT_SECONDS; a second signal
// exits at once. Exit code 0 after a complete shutdown, 1 when it was cut short, 2 when the
// configuration, the database or the key is refused at start.
import { runCommand } from "./command.js";
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
  const out = (line: string) => process.stdout.write(line + "\n");
  out(`Tenant API listening on ${server.url} (tenant ${config.baseUrl})`);
  out(`  docs:     ${server.url}/docs`);
  out(`  contract: ${server.url}/openapi.yaml`);
  if (server.metricsUrl) out(`  metrics:  ${server.metricsUrl}`);
  out(`  database: ${config.database.kind === "sqlite" ? `sqlite:${config.database.path}` : "postgres"}`);
  if (server.bootstrap) {
    out(`Bootstrap super-admin created on this new database.`);
    out(`  client_id:     ${server.bootstrap.clientId}`);
    out(server.bootstrap.clientSecret ? `  client_secret: ${server.bootstrap.clientSecret}  (shown once; store it now)` : `  client_secret: the configured BOOTSTRAP_CLIENT_SECRET`);
  }
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
      if (performance.now() - stoppingSince < REPEATED_SIGNAL_MS) return;
      return cut("second signal: exiting at once", { signal });
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
