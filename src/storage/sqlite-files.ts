// The files of an SQLite database, under every name a path may give them. SQLite finds, by name
// alone, the files it keeps beside a database (`-wal`, the last commits; `-shm`, the log's index
// shared by every process; `-journal`, a rollback journal played back when found), so a file put
// under one of those names is taken for the database's own: a replaced log's commits are lost at
// the next crash, and a stranger keeps other processes out. docs/operating.md, "Backups and
// restore".
import { lstatSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, sep } from "node:path";

export const COMPANIONS = ["-wal", "-shm", "-journal"] as const;

/** "" names the database's file itself. */
export type Suffix = "" | (typeof COMPANIONS)[number];

/** `path` and the names SQLite gives its companions. */
export const withCompanions = (path: string): string[] => [path, ...COMPANIONS.map((suffix) => path + suffix)];

/**
 * `file` (absolute, as typed: not normalized) with its folder's `..` and symbolic links resolved as
 * the system resolves them when it opens the file: `link/..` is the parent of the link's target.
 * Throws when the folder does not exist.
 */
export function inRealFolder(file: string): string {
  return join(realpathSync.native(dirname(file)), basename(file));
}

/** Where `file` leads through symbolic links, also to a file that does not exist (itself when it is no link). */
function leadsTo(file: string): string {
  let at = file;
  // The system's own limit of links followed in one path.
  for (let hops = 0; hops < 40; hops++) {
    let link: string;
    try {
      if (!lstatSync(at).isSymbolicLink()) return at;
      link = readlinkSync(at);
    } catch {
      return at;
    }
    const next = isAbsolute(link) ? link : `${dirname(at)}${sep}${link}`;
    try {
      at = inRealFolder(next);
    } catch {
      return next;
    }
  }
  return at;
}

const identity = (path: string): string | undefined => {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
};

/** One of a database's files that a path was found to name. */
export interface Named {
  /** Its name: the database's path and the suffix. */
  name: string;
  suffix: Suffix;
  /** The path names a folder inside it, not the file itself. */
  inside: boolean;
}

/** The database at a path and its companions, whether or not they exist, by name and by identity. */
export class SqliteFiles {
  private readonly names = new Map<string, Named>();
  private readonly identities = new Map<string, Named>();

  /** `database`: the database's file, which exists. */
  constructor(database: string) {
    // SQLite names the companions after the file's real path (the build this package installs
    // resolves symbolic links) or, built otherwise, after the path it was opened by: both.
    for (const path of [inRealFolder(database), realpathSync.native(database)]) {
      for (const suffix of ["", ...COMPANIONS] as const) {
        const named = { name: path + suffix, suffix, inside: false };
        this.names.set(named.name, named);
        const id = identity(named.name);
        if (id !== undefined) this.identities.set(id, named);
      }
    }
  }

  /**
   * Which of the files `file` (absolute, as typed) names: by its path, its folder's links and `..`
   * resolved; by where it leads through symbolic links; by identity (device and inode: a hard
   * link); or as a folder inside one of them. Undefined when none.
   */
  which(file: string): Named | undefined {
    let real: string;
    try {
      real = inRealFolder(file);
    } catch {
      return undefined;
    }
    const found = this.names.get(real) ?? this.names.get(leadsTo(real));
    if (found) return found;
    const id = identity(real);
    if (id !== undefined && this.identities.has(id)) return this.identities.get(id);
    for (let folder = dirname(real); folder !== dirname(folder); folder = dirname(folder)) {
      const named = this.names.get(folder);
      if (named) return { ...named, inside: true };
    }
    return undefined;
  }
}
