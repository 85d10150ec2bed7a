// Backup and restore of the embedded SQLite database (`npm run backup`, `npm run restore`;
// docs/operating.md "Backups and restore"). A backup is a whole, consistent copy taken while servers run and write;
// a restore puts one in place of a database no process has open, keeping the file it replaces.
// Either way a file at the path named is complete: it is written beside it and renamed onto it.
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readSync, realpathSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type SQLite from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { StartRefused } from "../config.js";
import { systemClock, type Clock } from "../core/clock.js";
import { loadSqlite } from "./connect.js";
import { migrationStatus } from "./migrate.js";

/** The command will not do what it was asked, and has changed nothing. */
export class BackupRefused extends Error {
  override name = "BackupRefused";
}

/** A database file of this service, as checked: its size and its migrations. */
export interface DatabaseFile {
  path: string;
  bytes: number;
  /** The migrations applied to it. */
  applied: string[];
  /** Those this release applies when it starts on it (or `npm run migrate` does). */
  pending: string[];
}

const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");

/** The files SQLite keeps beside a database while it is open or after a crash; they belong to that database's file alone. */
const COMPANIONS = ["-wal", "-shm", "-journal"] as const;

/** Returned by the backup's progress callback: the next step copies every page left. */
const ALL_PAGES = 0x7fffffff;

function startsAsSqlite(path: string): boolean {
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(SQLITE_HEADER.length);
    return readSync(fd, head, 0, head.length, 0) === head.length && head.equals(SQLITE_HEADER);
  } finally {
    closeSync(fd);
  }
}

const sameFile = (a: string, b: string) => existsSync(a) && existsSync(b) && realpathSync(a) === realpathSync(b);

/** A new name in `target`'s folder: what is written there is renamed onto `target` only once complete. */
const beside = (target: string) => join(dirname(target), `.${basename(target)}.partial-${randomBytes(6).toString("hex")}`);

function removeWithCompanions(path: string): void {
  for (const suffix of ["", ...COMPANIONS]) rmSync(path + suffix, { force: true });
}

/** Makes a rename in `dir` durable. */
function syncDirectory(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Copies `source` into the new file `destination` with SQLite's online backup, all pages in one
 * step: SQLite restarts a backup at its next step whenever another connection wrote meanwhile, so
 * a backup in small steps may never end under steady writes; one step reads the database in one
 * read transaction, one consistent snapshot, and in WAL mode the writers do not wait for it. The
 * copy is set to a rollback journal: one file, without a log beside it.
 */
async function snapshot(Driver: typeof SQLite, source: SQLite.Database, destination: string): Promise<void> {
  await source.backup(destination, { progress: () => ALL_PAGES });
  const copy = new Driver(destination, { fileMustExist: true });
  try {
    copy.pragma("journal_mode = DELETE");
  } finally {
    copy.close();
  }
  const fd = openSync(destination, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Refuses (BackupRefused) unless `path` is a whole database of this service that this release runs
 * on: SQLite's integrity check passes, it holds the record of this service's migrations, and no
 * migration in it was applied by a later release that does not run with this one (./migrate.ts).
 */
async function examine(Driver: typeof SQLite, path: string, what: string): Promise<DatabaseFile> {
  const database = new Driver(path, { fileMustExist: true });
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database }) });
  try {
    const problems = database.pragma("integrity_check") as { integrity_check: string }[];
    if (problems[0]?.integrity_check !== "ok") throw new BackupRefused(`${what} fails SQLite's integrity check: ${problems[0]?.integrity_check ?? "no answer"}`);
    const status = await migrationStatus(db, "sqlite");
    if (status.applied.length === 0) throw new BackupRefused(`${what} holds no record of this service's migrations: it is not a database of this service`);
    return { path, bytes: statSync(path).size, ...status };
  } catch (e) {
    if (e instanceof StartRefused) throw new BackupRefused(`${what} is not one this release runs on: ${e.message}`);
    throw e;
  } finally {
    await db.destroy();
  }
}

/**
 * Writes a backup of the database at `databasePath` to `target` (a new file, or with `replace` an
 * existing one), safe while servers run on it and write, and checks it as a restore will.
 */
export async function backupSqlite(databasePath: string, target: string, options: { replace: boolean }): Promise<DatabaseFile> {
  target = resolve(target);
  if (!existsSync(databasePath)) throw new BackupRefused(`there is no database at ${databasePath} (DATABASE_URL)`);
  if (sameFile(target, databasePath)) throw new BackupRefused(`${target} is the database of DATABASE_URL itself`);
  if (existsSync(target) && !options.replace) throw new BackupRefused(`${target} exists: name a new file, or add --force to replace it`);
  if (!existsSync(dirname(target))) throw new BackupRefused(`the folder ${dirname(target)} does not exist`);
  const Driver = await loadSqlite();
  const partial = beside(target);
  const source = new Driver(databasePath, { fileMustExist: true });
  try {
    await snapshot(Driver, source, partial);
    const checked = await examine(Driver, partial, "the copy");
    renameSync(partial, target);
    syncDirectory(dirname(target));
    return { ...checked, path: target };
  } finally {
    source.close();
    removeWithCompanions(partial);
  }
}

/**
 * Refuses (BackupRefused) while any process has the database at `path` open; else folds its log
 * into it, so that the file alone is the whole database. Every connection to a database in WAL mode
 * (a server's, as long as it runs) holds a shared lock on its file from its first read until it
 * closes; a connection in exclusive locking mode must take an exclusive lock on the file at its
 * first read, which SQLite refuses at once (busy timeout 0) while another holds any. This is the
 * lock SQLite itself relies on to know it is alone, as sound as the file system's locks are (local
 * file systems; SQLite's WAL mode is not for network ones).
 */
function takeOver(Driver: typeof SQLite, path: string): void {
  const database = new Driver(path, { fileMustExist: true, timeout: 0 });
  try {
    database.pragma("locking_mode = EXCLUSIVE");
    try {
      database.exec("begin exclusive; commit");
    } catch (e) {
      if ((e as { code?: string }).code !== "SQLITE_BUSY") throw e;
      throw new BackupRefused(`the database at ${path} is open in another process, a server most likely: stop every server on it, then restore`);
    }
    database.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    database.close();
  }
}

/** Where the database a restore replaces is kept: `<path>.before-restore-<UTC time>`, never an existing file. */
function asideName(path: string, clock: Clock): string {
  const stamp = new Date(clock.now()).toISOString().replace(/[-:]/g, "");
  for (let n = 1; ; n++) {
    const aside = `${path}.before-restore-${stamp}${n === 1 ? "" : `-${n}`}`;
    if (!existsSync(aside)) return aside;
  }
}

export interface Restored extends DatabaseFile {
  /** Where the database it replaced is kept (null: there was none). */
  replacedKeptAt: string | null;
}

/**
 * Puts the backup `backup` in place of the database at `databasePath`, which no process may have
 * open: checked as a backup is (examine), copied beside it, then renamed onto it; the database it
 * replaces is renamed aside, never deleted, and the log files of that one removed, since SQLite
 * would replay a stale log into the restored file.
 */
export async function restoreSqlite(backup: string, databasePath: string, clock: Clock = systemClock): Promise<Restored> {
  backup = resolve(backup);
  if (!existsSync(backup) || !statSync(backup).isFile()) throw new BackupRefused(`there is no file at ${backup}`);
  if (sameFile(backup, databasePath)) throw new BackupRefused(`${backup} is the database of DATABASE_URL itself`);
  if (!startsAsSqlite(backup)) throw new BackupRefused(`${backup} is not an SQLite database`);
  const Driver = await loadSqlite();
  mkdirSync(dirname(databasePath), { recursive: true });
  const partial = beside(databasePath);
  try {
    const source = new Driver(backup, { readonly: true, fileMustExist: true });
    try {
      await snapshot(Driver, source, partial);
    } finally {
      source.close();
    }
    const checked = await examine(Driver, partial, backup);
    let replacedKeptAt: string | null = null;
    if (existsSync(databasePath)) {
      takeOver(Driver, databasePath);
      replacedKeptAt = asideName(databasePath, clock);
      renameSync(databasePath, replacedKeptAt);
    }
    for (const suffix of COMPANIONS) rmSync(databasePath + suffix, { force: true });
    renameSync(partial, databasePath);
    syncDirectory(dirname(databasePath));
    return { ...checked, path: databasePath, replacedKeptAt };
  } finally {
    removeWithCompanions(partial);
  }
}
