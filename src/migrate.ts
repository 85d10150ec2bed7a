// `npm run migrate`: applies this release's pending migrations to the database of DATABASE_URL and
// exits, for deployments that start the server with MIGRATE_AT_START=0 (docs/operating.md "Upgrading").
// Each migration is applied in a transaction of its own and printed once it is: should one fail, the
// ones before it stay applied, and the command can be run again.
import { configOrExit, exitRefused, loadDatabaseConfig } from "./config.js";
import { runCommand } from "./command.js";
import { migrateStorage } from "./storage/connect.js";

async function migrate(): Promise<void> {
  const config = configOrExit(loadDatabaseConfig);
  const applied = await migrateStorage(config, {
    onApplied: (step) => process.stdout.write(`applied ${step}\n`),
    onRetry: ({ step, attempt, attempts, cause, pauseMs }) =>
      process.stderr.write(`migration ${step} did not get its locks (${cause}; attempt ${attempt} of ${attempts}): the requests holding them go first, trying again in ${pauseMs} ms\n`),
  }).catch(exitRefused);
  process.stdout.write(applied.length === 0 ? "migrations: none pending\n" : `migrations applied: ${applied.join(", ")}\n`);
}

runCommand("migration failed", migrate);
