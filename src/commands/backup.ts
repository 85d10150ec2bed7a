// `npm run backup -- <file> [--force]`: writes a backup of the SQLite database of DATABASE_URL to
// <file>, safe while servers run on it (docs/operating.md "Backups and restore").
import { ConfigError, secretsKey } from "../config.js";
import { runSqliteFileCommand } from "./sqlite-command.js";
import { backupSqlite } from "../storage/sqlite-backup.js";
import { keyName } from "../storage/secrets-key.js";

/** Where this environment's secrets key is, by name: never the key itself. */
function whereTheKeyIs(): string {
  try {
    return keyName(secretsKey(process.env));
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return "SECRETS_KEY, or the key file of SECRETS_KEY_FILE";
  }
}

runSqliteFileCommand({
  name: "backup",
  usage: "npm run backup -- <file> [--force]",
  flags: ["--force"],
  onPostgres: "DATABASE_URL names a PostgreSQL database: back it up with pg_dump (or pg_basebackup, or your provider's snapshots), and SECRETS_KEY with it (docs/operating.md \"Backups and restore\")",
  async run(file, databasePath, flags) {
    const written = await backupSqlite(databasePath, file, { replace: flags.has("--force") });
    return [
      `backup written: ${written.path} (${written.bytes} bytes)`,
      `  migrations: ${written.applied.length}, the last ${written.applied.at(-1)}`,
      `Keep the secrets key too, apart from this file: ${whereTheKeyIs()}. The webhook secrets in the backup are sealed with it and open with no other key.`,
    ];
  },
});
