// `npm run migrate`: applies this release's pending migrations to the database of DATABASE_URL and
// exits, for deployments that start the server with MIGRATE_AT_START=0 (docs/operating.md "Upgrading").
import { configOrExit, exitRefused, loadDatabaseConfig } from "./config.js";
import { runCommand } from "./command.js";
import { migrateStorage } from "./storage/connect.js";

async function migrate(): Promise<void> {
  const config = configOrExit(loadDatabaseConfig);
  const applied = await migrateStorage(config).catch(exitRefused);
  process.stdout.write(applied.length === 0 ? "migrations: none pending\n" : `migrations applied: ${applied.join(", ")}\n`);
}

runCommand("migration failed", migrate);
