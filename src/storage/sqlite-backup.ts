// Backup and restore of the embedded SQLite database (`npm run backup`, `npm run restore`;
// docs/operating.md "Backups and restore"). A backup is a whole, consistent copy taken while servers run and write;
// a restore puts one in place of a database no process has open, keeping the file it replaces.
// Either way a file at the path named is complete: it is written beside it and renamed onto it.
// Paths come absolute and as typed: `..` after a symbolic link means what the system makes of it.
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type SQLite from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { StartRefused } from "../config.js";
import { systemClock, type Clock } from "../core/clock.js";
import { loadSqlite } from "./connect.js";
import { migrationStatus } from "./migrate-up.js";
import { ForeignDatabase } from "./migration-records.js";
import { COMPANIONS, inRealFolder, SqliteFiles, withCompanions, type Named, type Suffix } from "./sqlite-files.js";

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

const ROLES: Record<Suffix, string> = {
  "": "the database of DATABASE_URL itself",
  "-wal": "the write-ahead log of the database of DATABASE_URL",
  "-shm": "the shared-memory index of the log of the database of DATABASE_URL",
  "-journal": "the rollback journal of the database of DATABASE_URL",
};

const described = (named: Named) => `${named.inside ? "inside " : ""}${ROLES[named.suffix]} (${named.name})`;

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

const isFile = (path: string) => statSync(path, { throwIfNoEntry: false })?.isFile() === true;

/** Whether there is an entry at `path`: a file, a folder, or a symbolic link, even one that leads nowhere. */
const isEntry = (path: string) => lstatSync(path, { throwIfNoEntry: false }) !== undefined;

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

const NOT_OURS = (what: string) => `${what} holds no record of this service's migrations: it is not a database of this service`;

/**
 * Refuses (BackupRefused) unless `path` is a whole database of this service that this release runs
 * on: SQLite's integrity check passes, it holds the record of this service's migrations, and no
 * migration in it was applied by a later release that does not run with this one (./migrate-up.ts).
 */
async function examine(Driver: typeof SQLite, path: string, what: string): Promise<DatabaseFile> {
  const database = new Driver(path, { fileMustExist: true });
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database }) });
  try {
    const problems = database.pragma("integrity_check") as { integrity_check: string }[];
    if (problems[0]?.integrity_check !== "ok") throw new BackupRefused(`${what} fails SQLite's integrity check: ${problems[0]?.integrity_check ?? "no answer"}`);
    const status = await migrationStatus(db, "sqlite");
    if (status.applied.length === 0) throw new BackupRefused(NOT_OURS(what));
    return { path, bytes: statSync(path).size, ...status };
  } catch (e) {
    if (e instanceof ForeignDatabase) throw new BackupRefused(NOT_OURS(what));
    if (e instanceof StartRefused) throw new BackupRefused(`${what} is not one this release runs on: ${e.message}`);
    throw e;
  } finally {
    await db.destroy();
  }
}

/**
 * Refuses (BackupRefused) a target that is a file of the live database, or inside one, whichever
 * way it is spelled (./sqlite-files.ts); nor may SQLite ever take one of them for a file of the
 * backup's: the target's companions (named when the backup is opened) and those of the temporary
 * file (while it is written) are none of them either.
 */
function refuseLiveFiles(live: SqliteFiles, target: string, partial: string): void {
  const named = live.which(target);
  if (named) throw new BackupRefused(`${target} is ${described(named)}: a backup never writes over the live database or its -wal, -shm and -journal files`);
  const backupFiles = [...withCompanions(target).slice(1).map((file) => ({ of: target, file })), ...withCompanions(partial).map((file) => ({ of: partial, file }))];
  for (const { of, file } of backupFiles) {
    const taken = live.which(file);
    if (taken) throw new BackupRefused(`${file}, which SQLite would take for a file of ${of}, is ${described(taken)}: name another file`);
  }
}

/** Refuses (BackupRefused) a target named as a companion of another SQLite database beside it, which SQLite would take it for. */
function refuseCompanionOfAnother(target: string): void {
  for (const suffix of COMPANIONS) {
    const owner = target.slice(0, -suffix.length);
    if (target.endsWith(suffix) && isFile(owner) && startsAsSqlite(owner)) {
      throw new BackupRefused(`${target} is named as the ${suffix} file of the SQLite database ${owner}, which SQLite would take it for: name another file`);
    }
  }
}

/**
 * Refuses (BackupRefused) to replace `target` when it is an SQLite database that a process has open
 * (another service's, say): that process would go on using it while the next to open it found the
 * backup instead. And when a log or a journal lies beside it: SQLite would play it into the backup
 * when it opens it. A database no process has open is checked by opening it alone, which plays its
 * own log or journal back and removes it.
 */
function refuseReplacing(Driver: typeof SQLite, target: string): void {
  if (isFile(target) && startsAsSqlite(target) && !alone(Driver, target)) {
    throw new BackupRefused(`${target} is an SQLite database that another process has open: a backup does not replace a database in use`);
  }
  for (const log of [`${target}-wal`, `${target}-journal`]) {
    if (isEntry(log)) throw new BackupRefused(`${log} exists: SQLite would play it into the backup; remove it, or name another file`);
  }
}

/**
 * Writes a backup of the database at `databasePath` to `target` (absolute; a new file, or with
 * `replace` an existing one), safe while servers run on it and write, and checks it as a restore will.
 */
export async function backupSqlite(databasePath: string, target: string, options: { replace: boolean }): Promise<DatabaseFile> {
  if (!existsSync(databasePath)) throw new BackupRefused(`there is no database at ${databasePath} (DATABASE_URL)`);
  if (!existsSync(dirname(target)) || !statSync(dirname(target)).isDirectory()) throw new BackupRefused(`the folder ${dirname(target)} does not exist`);
  target = inRealFolder(target);
  if (statSync(target, { throwIfNoEntry: false })?.isDirectory()) throw new BackupRefused(`${target} is a folder: name the backup's file`);
  const partial = beside(target);
  refuseLiveFiles(new SqliteFiles(databasePath), target, partial);
  refuseCompanionOfAnother(target);
  if (isEntry(target) && !options.replace) throw new BackupRefused(`${target} exists: name a new file, or add --force to replace it`);
  const Driver = await loadSqlite();
  refuseReplacing(Driver, target);
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
 * Whether no other process has the database at `path` open; when none has, runs `then` on a
 * connection that holds it alone. Every connection to a database in WAL mode (a server's, as long as
 * it runs) holds a shared lock on its file from its first read until it closes; a connection in
 * exclusive locking mode must take an exclusive lock on the file at its first read, which SQLite
 * refuses at once (busy timeout 0) while another holds any. This is the lock SQLite itself relies on
 * to know it is alone, as sound as the file system's locks are (local file systems; SQLite's WAL
 * mode is not for network ones). A connection in rollback-journal mode holds a lock only while it
 * reads or writes: between its transactions it is not seen.
 */
function alone(Driver: typeof SQLite, path: string, then: (database: SQLite.Database) => void = () => undefined): boolean {
  const database = new Driver(path, { fileMustExist: true, timeout: 0 });
  try {
    database.pragma("locking_mode = EXCLUSIVE");
    try {
      database.exec("begin exclusive; commit");
    } catch (e) {
      if ((e as { code?: string }).code !== "SQLITE_BUSY") throw e;
      return false;
    }
    then(database);
    return true;
  } finally {
    database.close();
  }
}

/** Refuses (BackupRefused) while any process has the database at `path` open; else folds its log into it, so that the file alone is the whole database. */
function takeOver(Driver: typeof SQLite, path: string): void {
  if (!alone(Driver, path, (database) => database.pragma("wal_checkpoint(TRUNCATE)"))) {
    throw new BackupRefused(`the database at ${path} is open in another process, a server most likely: stop every server on it, then restore`);
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
  if (!isFile(backup)) throw new BackupRefused(`there is no file at ${backup}`);
  backup = inRealFolder(backup);
  const named = existsSync(databasePath) ? new SqliteFiles(databasePath).which(backup) : undefined;
  if (named) throw new BackupRefused(`${backup} is ${described(named)}`);
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
