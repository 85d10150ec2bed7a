// What `npm run backup` and `npm run restore` share: a file argument and flags, the SQLite database
// of DATABASE_URL, and their exit codes: 0 done, 2 refused (nothing changed; also a bad argument or
// configuration), 1 failed.
import { isAbsolute, sep } from "node:path";
import { runCommand } from "./run-command.js";
import { configOrExit, exitRefused, loadDatabaseConfig } from "../config.js";
import { BackupRefused } from "../storage/sqlite-backup.js";

export interface SqliteFileCommand {
  name: string;
  usage: string;
  flags: readonly string[];
  /** What to do instead on PostgreSQL. */
  onPostgres: string;
  /** Does the work; answers the lines to print. */
  run(file: string, databasePath: string, flags: ReadonlySet<string>): Promise<string[]>;
}

function refuse(name: string, message: string): never {
  process.stderr.write(`${name} refused: ${message}\n`);
  process.exit(2);
}

async function run(command: SqliteFileCommand): Promise<void> {
  const args = process.argv.slice(2);
  const files = args.filter((a) => !a.startsWith("--"));
  const flags = new Set(args.filter((a) => a.startsWith("--")));
  const unknown = [...flags].find((f) => !command.flags.includes(f));
  if (files.length !== 1 || unknown !== undefined) refuse(command.name, `${unknown ? `unknown option ${unknown}; ` : ""}usage: ${command.usage}`);
  const database = configOrExit(loadDatabaseConfig);
  if (database.kind === "postgres") refuse(command.name, command.onPostgres);
  if (database.path === ":memory:") refuse(command.name, "DATABASE_URL names an in-memory database, which no other process can read");
  try {
    // npm runs a script in the package's folder; a relative path means the caller's (INIT_CWD).
    // Joined as typed, not normalized: `link/..` is the parent of the link's target, as for `cp`.
    const file = files[0]!;
    const lines = await command.run(isAbsolute(file) ? file : `${process.env.INIT_CWD ?? process.cwd()}${sep}${file}`, database.path, flags);
    process.stdout.write(lines.map((l) => l + "\n").join(""));
  } catch (e) {
    if (e instanceof BackupRefused) refuse(command.name, e.message);
    exitRefused(e);
  }
}

/** Runs `command` on the arguments and environment of this process; anything it did not foresee ends the process with exit code 1 and its message. */
export function runSqliteFileCommand(command: SqliteFileCommand): void {
  runCommand(`${command.name} failed`, () => run(command));
}
