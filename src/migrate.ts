// `npm run migrate`: applies this release's pending migrations to the database of DATABASE_URL and
// exits, for deployments that start the server with MIGRATE_AT_START=0 (README "Upgrading").
import { exitRefused, loadDatabaseConfig } from "./config.js";
import { migrateStorage } from "./storage/connect.js";

async function migrate(): Promise<void> {
  let config;
  try {
    config = loadDatabaseConfig();
  } catch (e) {
    exitRefused(e);
  }
  const applied = await migrateStorage(config).catch(exitRefused);
  process.stdout.write(applied.length === 0 ? "migrations: none pending\n" : `migrations applied: ${applied.join(", ")}\n`);
}

migrate().catch((err: unknown) => {
  process.stderr.write(`migration failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
