// `npm run restore -- <file>`: puts a backup (`npm run backup`) in place of the SQLite database of
// DATABASE_URL, which no server may have open; the database it replaces is kept beside it
// (docs/operating.md "Backups and restore").
import { runSqliteFileCommand } from "./sqlite-command.js";
import { restoreSqlite } from "../storage/sqlite-backup.js";

runSqliteFileCommand({
  name: "restore",
  usage: "npm run restore -- <file>",
  flags: [],
  onPostgres: "DATABASE_URL names a PostgreSQL database: restore it with pg_restore or psql (or your provider's tools), then start with the SECRETS_KEY of the backup (docs/operating.md \"Backups and restore\")",
  async run(file, databasePath) {
    const restored = await restoreSqlite(file, databasePath);
    const { pending } = restored;
    return [
      `restored: ${restored.path} from ${file} (${restored.bytes} bytes)`,
      `  migrations: ${restored.applied.length}, the last ${restored.applied.at(-1)}` +
        (pending.length === 0 ? "" : `; ${pending.length} pending, applied at the server's start (or by \`npm run migrate\` with MIGRATE_AT_START=0)`),
      restored.replacedKeptAt ? `  the database it replaced is kept at ${restored.replacedKeptAt}` : `  there was no database there before`,
      `Start the servers with the secrets key the backup was made with: they refuse to start with another.`,
    ];
  },
});
