// `npm run migrate`: applies this release's pending migrations to the database of DATABASE_URL and
// exits, for deployments that start the server with MIGRATE_AT_START=0; each in a transaction of
// its own, printed once applied, so after a failure the command can be run again. `npm run migrate
// -- --down-to <release>`: the way back (storage/migrate-down.ts), with this release's servers
// stopped; it reads SECRETS_KEY too when that release reads signing keys in the clear.
// docs/operating.md, "Upgrading".
import { runCommand } from "./run-command.js";
import { ConfigError, configOrExit, exitRefused, loadDatabaseConfig, loadKeyCommandConfig } from "../config.js";
import { spendKeptReferences } from "../http/handlers/spend-handlers.js";
import { keepAnswersWhole } from "../http/idempotency.js";
import { unsealSigningKeys } from "../identity/signing-keys.js";
import { asAuthorizedIn } from "../funds/spends/spend-rows.js";
import { checkSealedSecrets } from "../sealed-secrets.js";
import { migrateStorage, rollBackStorage } from "../storage/connect.js";
import type { MigrationTransactionOptions } from "../storage/migration-transaction.js";
import { releaseNamed, RELEASES, type Release } from "../storage/releases.js";
import { loadSecretsKey } from "../storage/secrets-key.js";
import { SecretBox } from "../webhooks/secret-box.js";

const USAGE = "usage: npm run migrate [-- --down-to <release>]";
const out = (line: string) => process.stdout.write(`${line}\n`);

const onRetry: MigrationTransactionOptions["onRetry"] = ({ step, attempt, attempts, cause, pauseMs }) =>
  process.stderr.write(`migration ${step} did not get its locks (${cause}; attempt ${attempt} of ${attempts}): the requests holding them go first, trying again in ${pauseMs} ms\n`);

/** The release `--down-to` names, or the configuration error saying which there are. */
function downTo(args: readonly string[]): Release | undefined {
  if (args.length === 0) return undefined;
  const [flag, name, ...rest] = args;
  if (flag !== "--down-to" || name === undefined || rest.length > 0) throw new ConfigError(USAGE);
  const release = releaseNamed(name);
  if (!release) throw new ConfigError(`--down-to names no release of this one's record (src/storage/releases.ts) by its commit: ${RELEASES.map((r) => r.commit.slice(0, 7)).join(", ")}`);
  return release;
}

async function migrateUp(): Promise<void> {
  const config = configOrExit(loadDatabaseConfig);
  const applied = await migrateStorage(config, { onApplied: (step) => out(`applied ${step}`), onRetry }).catch(exitRefused);
  out(applied.length === 0 ? "migrations: none pending" : `migrations applied: ${applied.join(", ")}`);
}

async function migrateDown(release: Release): Promise<void> {
  const name = release.commit.slice(0, 7);
  const config = configOrExit(() => (release.readsPlainSigningKeys ? loadKeyCommandConfig() : { database: loadDatabaseConfig(), secretsKey: undefined }));
  const box = config.secretsKey && new SecretBox(loadSecretsKey(config.secretsKey));
  const done: string[] = [];
  const result = await rollBackStorage(config.database, release, {
    onRetry,
    // A key that does not open what the database holds sealed would open no signing key.
    prepare: async (storage) => (box && config.secretsKey ? checkSealedSecrets(storage, box, config.secretsKey) : undefined),
    legacy: async (db) => {
      if (box) done.push(`signing keys opened for release ${name}, which reads them in the clear: ${await unsealSigningKeys(db, box)}`);
      if (release.readsWholeAnswersOnly) done.push(`kept answers made whole: ${await keepAnswersWhole(db, spendKeptReferences({ asAuthorized: (id) => asAuthorizedIn(db, id) }))}`);
    },
  }).catch(exitRefused);
  for (const step of result.undone) out(`undone ${step}`);
  if (result.kept.length > 0) out(`kept (release ${name} runs with them): ${result.kept.join(", ")}${result.hidden.length > 0 ? `; hidden from its check of kysely_migration` : ""}`);
  done.forEach(out);
  out(`the database is ready for release ${name}: start it; \`npm run migrate\` of this release brings the database back`);
}

runCommand("migration failed", async () => {
  const release = configOrExit(() => downTo(process.argv.slice(2)));
  await (release ? migrateDown(release) : migrateUp());
});
