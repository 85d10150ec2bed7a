// `npm run backup` and `npm run restore` as an operator runs them, on real server processes and
// SQLite files: a backup taken while a server keeps writing under load is a whole, consistent
// database; restored into a new place, a new server with the same SECRETS_KEY serves its data
// (the limit, an authorization, a webhook signed with the secret sealed before the backup). And
// what they refuse: a PostgreSQL database, a file that exists, a file that is no database of this
// service, a target a server runs on; and the backup, a file of the live database however it is
// spelled (a replaced log loses the commits it held at the next crash), or another database in
// use. The commands run from their sources, as `npm run migrate`'s
// tests run it; npm-start.test.ts runs the built ones with only the runtime dependencies.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hmacSignature } from "../../../src/client/webhook-sender.js";
import { migrationSteps } from "../../../src/storage/migrations/migration-list.js";
import { Acceptance, type Hook } from "../../support/acceptance.js";
import { testDialect } from "../../support/database.js";
import type { RunResult, Served } from "../../support/process.js";
import { root, runCommand, serveRelease, startToEnd, TEST_SECRETS_KEY } from "../../support/release.js";

const ADMIN = { clientId: "backup-admin", clientSecret: "backup-admin-secret-0123456789" };
const APP = "app-backup";
const ours = migrationSteps("sqlite").map((s) => s.name);

const dir = mkdtempSync(join(tmpdir(), "tenant-backup-"));
const livePath = join(dir, "live", "tenant.sqlite");
const env = (path: string) => ({ DATABASE_URL: `sqlite:${path}`, SECRETS_KEY: TEST_SECRETS_KEY, BOOTSTRAP_CLIENT_ID: ADMIN.clientId, BOOTSTRAP_CLIENT_SECRET: ADMIN.clientSecret, RATE_LIMIT: "off" });
const backup = (file: string, databasePath = livePath, ...flags: string[]) => runCommand("src/commands/backup.ts", [file, ...flags], env(databasePath));
const restore = (file: string, databasePath: string) => runCommand("src/commands/restore.ts", [file], env(databasePath));

const running: Served[] = [];
afterAll(async () => {
  for (const server of running) await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

const usd = (units: number) => ({ currencyCode: "USD", units: String(units), nanos: 0 });

interface Load {
  /** The ids of the spends of 1 USD captured so far (answered 200), and the status of every answer. */
  captured: string[];
  statuses: number[];
  stop(): Promise<void>;
}

/**
 * Writes on `url` until stopped (`maxRequests` or 90 s at most), or until the server is gone:
 * `callers` in a loop, each capturing a spend of 1 USD and delivering a signed event to `hook`.
 */
function startLoad(url: string, token: string, userId: string, hook: Hook, { maxRequests = 3_000, callers = 4 } = {}): Load {
  let stopping = false;
  const deadline = Date.now() + 90_000;
  const load: Load = { captured: [], statuses: [], stop: async () => undefined };
  const spend = async () => {
    const response = await fetch(`${url}/api/v1/funds/spend-authorizations`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Idempotency-Key": randomUUID() },
      body: JSON.stringify({ userId, appId: APP, amount: usd(1), capture: true }),
    });
    const answer = (await response.json()) as any;
    if (answer.authorization?.state === "SPEND_AUTHORIZATION_STATE_CAPTURED") load.captured.push(answer.authorization.id);
    return response.status;
  };
  const deliver = async () => {
    const body = JSON.stringify({ event: "under-backup" });
    const eventId = randomUUID();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const response = await fetch(url + new URL(hook.url).pathname, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId, "Webhook-Signature": hmacSignature(hook.secret, timestamp, eventId, body) },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  };
  const caller = async () => {
    try {
      while (!stopping && load.statuses.length < maxRequests && Date.now() < deadline) {
        load.statuses.push(await spend());
        load.statuses.push(await deliver());
      }
    } catch (e) {
      // The server was killed: a request in flight has no answer, and this caller ends.
      if (!(e instanceof TypeError)) throw e;
    }
  };
  const running = Promise.all(Array.from({ length: callers }, caller));
  load.stop = async () => {
    stopping = true;
    await running;
  };
  return load;
}

async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Every authorization of the subject for APP that the server lists, page by page. */
async function listed(api: Acceptance, userId: string): Promise<any[]> {
  const all: any[] = [];
  let token = "";
  do {
    const page = await api.call("GET", `/api/v1/funds/spend-authorizations?user_id=${userId}&app_id=${APP}&page_size=100${token ? `&page_token=${token}` : ""}`);
    expect(page.status).toBe(200);
    all.push(...page.body.list.map((item: any) => item.authorization));
    token = page.body.nextPageToken;
  } while (token);
  return all;
}

const count = (path: string, table: string) => {
  const db = new SQLite(path, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
};

describe.skipIf(testDialect() !== "sqlite")("npm run backup and npm run restore (SQLite)", () => {
  let live: Served;
  let api: Acceptance;
  let subject: string;
  let pending: string;
  let hook: Hook;
  const backupFile = join(dir, "backups", "tenant-backup.sqlite");
  const restoredPath = join(dir, "restored", "tenant.sqlite");
  let capturedBeforeBackup = 0;
  let capturedAfterBackup = 0;

  beforeAll(async () => {
    mkdirSync(join(dir, "backups"));
    live = await serveRelease(env(livePath));
    running.push(live);
    api = new Acceptance(live.url, ADMIN);
    subject = (await api.subject()).body.user.id;
    expect((await api.limit(subject, APP, 1_000_000)).status).toBe(200);
    pending = (await api.authorize(subject, APP, 7)).body.authorization.id;
    hook = await api.hook();
    expect(await api.deliver(hook)).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
  }, 120_000);

  it("backs up while the server writes under load, without holding it up: a whole database of every migration, taken between the load's start and end", { timeout: 180_000 }, async () => {
    const load = startLoad(live.url, (await api.token()).body.access_token, subject, hook);
    try {
      await until("the load's first spends", () => load.captured.length >= 20);
      capturedBeforeBackup = load.captured.length;
      const run = await backup(backupFile);
      capturedAfterBackup = load.captured.length;
      expect(run.code, run.out).toBe(0);
      const bytes = readFileSync(backupFile).length;
      expect(run.stdout).toContain(`backup written: ${backupFile} (${bytes} bytes)`);
      expect(run.stdout).toContain(`migrations: ${ours.length}, the last ${ours.at(-1)}`);
      expect(run.stdout).toContain("Keep the secrets key too, apart from this file: SECRETS_KEY.");
      expect(run.out).not.toContain(TEST_SECRETS_KEY);
      await until("spends after the backup", () => load.captured.length >= capturedAfterBackup + 20);
    } finally {
      await load.stop();
    }
    expect(load.statuses.filter((s) => s !== 200)).toEqual([]);
    // Nothing but the backup beside it: the partial file was renamed onto it, SQLite's journal gone.
    expect(readdirSync(join(dir, "backups"))).toEqual(["tenant-backup.sqlite"]);

    const copy = new SQLite(backupFile, { readonly: true, fileMustExist: true });
    try {
      expect(copy.pragma("integrity_check")).toEqual([{ integrity_check: "ok" }]);
      expect(copy.pragma("journal_mode", { simple: true }), "one file, no log beside it").toBe("delete");
      expect((copy.prepare("select name from kysely_migration order by name").all() as { name: string }[]).map((r) => r.name)).toEqual(ours);
      const captured = (copy.prepare("select count(*) as n from spend_authorizations where state = 'CAPTURED'").get() as { n: number }).n;
      expect(captured).toBeGreaterThanOrEqual(capturedBeforeBackup);
      expect(captured).toBeLessThanOrEqual(capturedAfterBackup + 4);
    } finally {
      copy.close();
    }
  });

  it("restores into a new place; a new server with the same SECRETS_KEY serves the data, the usage consistent with the authorizations, and the sealed secret opens", { timeout: 180_000 }, async () => {
    const run = await restore(backupFile, restoredPath);
    expect(run.code, run.out).toBe(0);
    expect(run.stdout).toContain(`restored: ${restoredPath} from ${backupFile}`);
    expect(run.stdout).toContain("there was no database there before");

    const refused = await startToEnd({ ...env(restoredPath), SECRETS_KEY: Buffer.alloc(32, 9).toString("base64url") });
    expect(refused.code, refused.out).toBe(2);
    expect(refused.stderr).toContain("SECRETS_KEY does not open the");

    const server = await serveRelease(env(restoredPath));
    running.push(server);
    const restored = new Acceptance(server.url, ADMIN);
    expect((await restored.call("GET", `/api/v1/funds/spend-authorizations/${pending}`)).body.authorization).toMatchObject({ id: pending, state: "SPEND_AUTHORIZATION_STATE_PENDING" });
    // The window's usage (one row) is what its authorizations (their own rows) add up to: the
    // backup caught no write half done.
    const authorizations = await listed(restored, subject);
    const captured = authorizations.filter((a) => a.state === "SPEND_AUTHORIZATION_STATE_CAPTURED").length;
    expect(captured).toBeGreaterThanOrEqual(capturedBeforeBackup);
    const effective = (await restored.effective(subject, APP)).body.effective;
    expect(effective.usage).toMatchObject({ limit: usd(1_000_000), spent: usd(captured), held: usd(7) });
    expect(await restored.deliver(hook)).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
    expect((await restored.authorize(subject, APP, 1, true)).body.authorization.state).toBe("SPEND_AUTHORIZATION_STATE_CAPTURED");
  });

  it("refuses to restore over the database of a running server, and changes nothing", { timeout: 60_000 }, async () => {
    const before = readdirSync(join(dir, "live")).sort();
    const run = await restore(backupFile, livePath);
    expect(run.code, run.out).toBe(2);
    expect(run.stderr).toContain(`restore refused: the database at ${livePath} is open in another process, a server most likely: stop every server on it, then restore`);
    expect(readdirSync(join(dir, "live")).sort()).toEqual(before);
    expect((await api.authorize(subject, APP, 1, true)).body.authorization.state).toBe("SPEND_AUTHORIZATION_STATE_CAPTURED");
  });

  it("restores over the database of a server that crashed: the replaced one kept aside whole, its log folded in, the log files gone", { timeout: 60_000 }, async () => {
    live.child.kill("SIGKILL");
    await live.stop();
    expect(existsSync(`${livePath}-wal`), "the crashed server's log").toBe(true);
    const spendsLive = count(livePath, "spend_authorizations");
    const run = await restore(backupFile, livePath);
    expect(run.code, run.out).toBe(0);
    const kept = /the database it replaced is kept at (\S+)/.exec(run.stdout)?.[1];
    expect(kept).toMatch(new RegExp(`^${livePath.replace(/[.]/g, "\\.")}\\.before-restore-\\d{8}T\\d{6}\\.\\d{3}Z$`));
    expect(count(kept!, "spend_authorizations")).toBe(spendsLive);
    expect(count(livePath, "spend_authorizations")).toBe(count(backupFile, "spend_authorizations"));
    expect(count(livePath, "spend_authorizations")).toBeLessThan(spendsLive);
    for (const log of ["-wal", "-shm", "-journal"]) expect(existsSync(livePath + log), log).toBe(false);
  });

  it("backup refuses to replace a file unless --force, leaves no file when it fails, and refuses a PostgreSQL database (pg_dump)", { timeout: 60_000 }, async () => {
    const before = readFileSync(backupFile);
    const existing = await backup(backupFile, restoredPath);
    expect(existing.code, existing.out).toBe(2);
    expect(existing.stderr).toContain(`backup refused: ${backupFile} exists: name a new file, or add --force to replace it`);
    expect(readFileSync(backupFile).equals(before)).toBe(true);
    const forced = await backup(backupFile, restoredPath, "--force");
    expect(forced.code, forced.out).toBe(0);
    expect(count(backupFile, "spend_authorizations")).toBe(count(restoredPath, "spend_authorizations"));

    // A backup that fails leaves nothing that could be taken for one.
    const other = join(dir, "other-service.sqlite");
    new SQLite(other).exec("create table things (id integer primary key)").close();
    const failed = await backup(join(dir, "backups", "other.sqlite"), other);
    expect(failed.code, failed.out).toBe(2);
    expect(failed.stderr).toContain("backup refused: the copy holds no record of this service's migrations: it is not a database of this service");
    expect(readdirSync(join(dir, "backups"))).toEqual(["tenant-backup.sqlite"]);

    const postgres = await runCommand("src/commands/backup.ts", [join(dir, "backups", "pg.sqlite")], { DATABASE_URL: "postgres://postgres@127.0.0.1:5432/tenant" });
    expect(postgres.code, postgres.out).toBe(2);
    expect(postgres.stderr).toContain("backup refused: DATABASE_URL names a PostgreSQL database: back it up with pg_dump");
    expect(existsSync(join(dir, "backups", "pg.sqlite"))).toBe(false);
  });

  it("restore refuses a file that is no database, a database of something else, and one a later release migrated beyond this one", { timeout: 60_000 }, async () => {
    const target = join(dir, "refused", "tenant.sqlite");
    const notDatabase = join(dir, "notes.txt");
    writeFileSync(notDatabase, "SQLite? no: a text file\n");
    const other = join(dir, "other.sqlite");
    new SQLite(other).exec("create table things (id integer primary key)").close();
    const later = join(dir, "later.sqlite");
    copyFileSync(backupFile, later);
    new SQLite(later).exec("insert into kysely_migration (name, timestamp) values ('9999_a_later_release', '2030-01-01T00:00:00.000Z')").close();

    const cases = [
      [notDatabase, `${notDatabase} is not an SQLite database`],
      [other, `${other} holds no record of this service's migrations: it is not a database of this service`],
      [later, `${later} is not one this release runs on: the database has migration 9999_a_later_release, applied by a later release`],
    ] as const;
    for (const [file, message] of cases) {
      const run = await restore(file, target);
      expect(run.code, run.out).toBe(2);
      expect(run.stderr).toContain(`restore refused: ${message}`);
    }
    expect(existsSync(join(dir, "refused")) ? readdirSync(join(dir, "refused")) : [], "nothing written, no partial file left").toEqual([]);
  });
});

/** A process holding a read transaction open on the SQLite database at `path`, once it has read. */
async function readerInTransaction(path: string): Promise<ChildProcess> {
  const source = `const db = new (require("better-sqlite3"))(process.argv[1]); db.exec("begin"); db.prepare("select count(*) from spend_authorizations").get(); console.log("reading"); setInterval(() => undefined, 60_000);`;
  const child = spawn(process.execPath, ["-e", source, path], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`the reader exited ${code}`)));
  });
  return child;
}

describe.skipIf(testDialect() !== "sqlite")("npm run backup never writes over a file of the live database (SQLite)", () => {
  const folder = join(dir, "guarded");
  const db = join(folder, "tenant.sqlite");
  const aside = join(dir, "spellings");
  let server: Served;
  let api: Acceptance;
  let subject: string;

  beforeAll(async () => {
    mkdirSync(join(folder, "nested"), { recursive: true });
    server = await serveRelease(env(db));
    running.push(server);
    api = new Acceptance(server.url, ADMIN);
    subject = (await api.subject()).body.user.id;
    expect((await api.limit(subject, APP, 1_000_000)).status).toBe(200);
  }, 120_000);

  const identity = (path: string) => {
    const s = lstatSync(path);
    return `${s.dev}:${s.ino}`;
  };

  it(
    "refuses the database, its -wal, -shm and -journal by every spelling (relative, `..`, a symbolic link to the folder or to the file, a hard link), with and without --force, while the server writes under load; nothing is written, and every write the server acknowledged is there after it is killed and restarted",
    { timeout: 180_000 },
    async () => {
      const hook = await api.hook();
      mkdirSync(aside);
      symlinkSync(folder, join(aside, "live-folder"));
      symlinkSync(join(folder, "nested"), join(aside, "nested-link"));
      symlinkSync(db, join(aside, "db-link"));
      symlinkSync(`${db}-wal`, join(aside, "wal-link"));
      symlinkSync(`${db}-journal`, join(aside, "journal-link"));
      linkSync(db, join(aside, "db-hard-link"));
      linkSync(`${db}-wal`, join(aside, "wal-hard-link"));
      linkSync(`${db}-shm`, join(aside, "shm-hard-link"));
      const DB = "the database of DATABASE_URL itself";
      const WAL = "the write-ahead log of the database of DATABASE_URL";
      const SHM = "the shared-memory index of the log of the database of DATABASE_URL";
      const JOURNAL = "the rollback journal of the database of DATABASE_URL";
      // [target as typed, the folder it is typed in, what it is]
      const spellings: [string, string, string][] = [
        ["tenant.sqlite", folder, DB],
        [join(folder, "nested") + "/../tenant.sqlite", dir, DB],
        [`${db}-wal`, dir, WAL],
        [`${db}-shm`, dir, SHM],
        [`${db}-journal`, dir, JOURNAL],
        ["tenant.sqlite-wal", folder, WAL],
        ["../guarded/tenant.sqlite-journal", aside, JOURNAL],
        ["live-folder/tenant.sqlite-wal", aside, WAL],
        // `..` after a symbolic link is the parent of the link's target, as the system reads it.
        ["nested-link/../tenant.sqlite-shm", aside, SHM],
        ["db-link", aside, DB],
        ["wal-link", aside, WAL],
        ["journal-link", aside, JOURNAL],
        ["db-hard-link", aside, DB],
        ["wal-hard-link", aside, WAL],
        ["shm-hard-link", aside, SHM],
      ];
      const files = [db, `${db}-wal`, `${db}-shm`];
      const before = files.map(identity);
      const links = readdirSync(aside).sort();
      const linksBefore = links.map((l) => identity(join(aside, l)));

      const load = startLoad(server.url, (await api.token()).body.access_token, subject, hook, { maxRequests: Infinity, callers: 2 });
      const runs: { target: string; flags: string[]; what: string; run: RunResult }[] = [];
      let identities: string[];
      let journal: boolean;
      let leftInFolder: string[];
      let reader: ChildProcess | undefined;
      try {
        await until("the load's first spends", () => load.captured.length >= 20);
        // Another process reads in a transaction from here until the crash (a report, say): the log
        // cannot be copied into the database file past its snapshot, so every later commit is in
        // the log alone until the restart replays it.
        reader = await readerInTransaction(db);
        const todo = spellings.flatMap(([target, cwd, what]) => [[], ["--force"]].map((flags) => ({ target, cwd, what, flags })));
        // Four at a time, the load going on.
        for (let i = 0; i < todo.length; i += 4) {
          runs.push(
            ...(await Promise.all(
              todo.slice(i, i + 4).map(async ({ target, cwd, what, flags }) => ({ target, flags, what, run: await runCommand("src/commands/backup.ts", [target, ...flags], { ...env(db), INIT_CWD: cwd }) })),
            )),
          );
        }
        const afterRuns = load.captured.length;
        await until("spends after the refusals", () => load.captured.length >= afterRuns + 20);
        identities = files.map(identity);
        journal = existsSync(`${db}-journal`);
        leftInFolder = readdirSync(folder).sort();
        // A crash under load: the commits the log holds are replayed at the restart.
        server.child.kill("SIGKILL");
        reader.kill("SIGKILL");
        await server.stop();
      } finally {
        reader?.kill("SIGKILL");
        await load.stop();
      }
      expect(load.statuses.filter((s) => s !== 200)).toEqual([]);
      const linksAfter = readdirSync(aside).sort();
      const restarted = await serveRelease(env(db));
      running.push(restarted);
      const ids = new Set((await listed(new Acceptance(restarted.url, ADMIN), subject)).map((a) => a.id));
      expect(load.captured.filter((id) => !ids.has(id)), `of ${load.captured.length} spends answered 200, those missing after the restart`).toEqual([]);

      for (const { target, flags, what, run } of runs) {
        expect(run.code, `${target} ${flags.join(" ")}: ${run.out}`).toBe(2);
        expect(run.stderr, target).toMatch(new RegExp(`^backup refused: .*${what.replace(/[.]/g, "\\.")}`));
      }
      expect(identities, "the database, its -wal and -shm: the same files").toEqual(before);
      expect(journal, "no -journal made").toBe(false);
      expect(leftInFolder, "nothing written beside the database").toEqual(["nested", "tenant.sqlite", "tenant.sqlite-shm", "tenant.sqlite-wal"]);
      expect(linksAfter).toEqual(links);
      expect(links.map((l) => identity(join(aside, l))), "the links as they were").toEqual(linksBefore);
    },
  );

  it("refuses, even with --force, an SQLite database another process has open, a name SQLite would take for another database's -wal, -shm or -journal, a target with a log beside it, and a folder; writes <database>-wal-wal, a name of no database", { timeout: 60_000 }, async () => {
    const other = join(dir, "another-service.sqlite");
    const service = new SQLite(other);
    service.pragma("journal_mode = WAL");
    service.exec("create table things (id integer primary key); insert into things default values");
    const cases = [
      [other, `${other} is an SQLite database that another process has open: a backup does not replace a database in use`],
      [`${other}-wal`, `${other}-wal is named as the -wal file of the SQLite database ${other}, which SQLite would take it for: name another file`],
      [`${other}-shm`, `${other}-shm is named as the -shm file of the SQLite database ${other}, which SQLite would take it for: name another file`],
      [`${other}-journal`, `${other}-journal is named as the -journal file of the SQLite database ${other}, which SQLite would take it for: name another file`],
      // A log beside the target, of whatever database it was, would be played into the backup.
      [join(dir, "stale.sqlite"), `${join(dir, "stale.sqlite")}-wal exists: SQLite would play it into the backup; remove it, or name another file`],
      [join(dir, "backups"), `${join(dir, "backups")} is a folder: name the backup's file`],
    ] as const;
    writeFileSync(join(dir, "stale.sqlite-wal"), "a log of some database");
    try {
      expect(service.prepare("select count(*) as n from things").get()).toEqual({ n: 1 });
      for (const [target, message] of cases) {
        const run = await backup(target, db, "--force");
        expect(run.code, run.out).toBe(2);
        expect(run.stderr).toContain(`backup refused: ${message}`);
      }
      service.exec("insert into things default values");
      expect(service.prepare("select count(*) as n from things").get(), "the other database, still its own").toEqual({ n: 2 });
    } finally {
      service.close();
    }
    // Closed, it is a file like any other.
    const replaced = await backup(other, db, "--force");
    expect(replaced.code, replaced.out).toBe(0);
    expect(count(other, "spend_authorizations")).toBe(count(db, "spend_authorizations"));

    const unrelated = await backup(`${db}-wal-wal`, db);
    expect(unrelated.code, unrelated.out).toBe(0);
    expect(readdirSync(folder).sort()).toEqual(["nested", "tenant.sqlite", "tenant.sqlite-shm", "tenant.sqlite-wal", "tenant.sqlite-wal-wal"]);
  });
});
