// `npm start`: serve the API with the configuration from the environment until SIGTERM or SIGINT.
import { exitRefused, loadConfig } from "./config.js";
import { limitHeapGrowth } from "./core/heap-growth.js";
import { createLogger } from "./core/logger.js";
import { startServer } from "./server.js";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    exitRefused(e);
  }
  limitHeapGrowth(config.heapGrowthPercent);
  const logger = createLogger(config.logLevel);
  const server = await startServer({ config, logger }).catch(exitRefused);
  const out = (line: string) => process.stdout.write(line + "\n");
  out(`Tenant API listening on ${server.url} (tenant ${config.baseUrl})`);
  out(`  docs:     ${server.url}/docs`);
  out(`  contract: ${server.url}/openapi.yaml`);
  out(`  database: ${config.database.kind === "sqlite" ? `sqlite:${config.database.path}` : "postgres"}`);
  if (server.bootstrap) {
    out(`Bootstrap super-admin created on this new database.`);
    out(`  client_id:     ${server.bootstrap.clientId}`);
    out(server.bootstrap.clientSecret ? `  client_secret: ${server.bootstrap.clientSecret}  (shown once; store it now)` : `  client_secret: the configured BOOTSTRAP_CLIENT_SECRET`);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ msg: "shutting down", signal });
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ msg: "shutdown failed", err });
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((err: unknown) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
