// `npm start` as a process manager runs it (systemd, a container runtime, a supervisor): it builds,
// serves, and when the npm process alone is sent SIGTERM, the server stops with it: no process it
// started runs on, and its port is closed. And the production start: `npm run build` once, then, in
// a copy of what it built with only the runtime dependencies installed (`npm ci --omit=dev
// --omit=optional`, from npm's cache), `npm run migrate`, `npm run rotate-signing-key` and `npm run
// serve` under NODE_ENV=production, and on SQLite `npm run backup` and `npm run restore`. On the
// test database (SQLite, or PostgreSQL in that leg).
//
// It runs in a copy of the package's sources (node_modules linked), kept between runs in the
// system's temporary folder: the build npm start makes would otherwise rewrite the checkout's
// dist/console while other test files serve it, and a kept copy keeps its dist/, so that the
// build's compiler (tsc -b) finds it current and the test pays for a full build only when the
// sources changed (the PostgreSQL leg reuses the SQLite leg's).
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../../support/database.js";
import { Acceptance } from "../../support/acceptance.js";
import { accepting, freePort, runToEnd, serve, terminate } from "../../support/process.js";

const root = fileURLToPath(new URL("../../..", import.meta.url));
/** What `npm run build` compiles and bundles, and what the server reads at run time (generated/). */
const PACKAGE = ["package.json", "tsconfig.json", "tsconfig.build.json", "src", "generated", "scripts", "console"];

/** The kept copy of this checkout's package: its sources copied afresh with their modification times, its dist/ left. */
function packageCopy(): string {
  const copy = join(tmpdir(), `tenant-api-npm-start-${createHash("sha256").update(root).digest("hex").slice(0, 12)}`);
  for (const entry of PACKAGE) {
    rmSync(join(copy, entry), { recursive: true, force: true });
    cpSync(join(root, entry), join(copy, entry), { recursive: true, preserveTimestamps: true });
  }
  rmSync(join(copy, "node_modules"), { force: true });
  symlinkSync(join(root, "node_modules"), join(copy, "node_modules"));
  return copy;
}

let dir: string;
let copy: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tenant-npm-start-"));
  copy = packageCopy();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("npm start", () => {
  it("builds and serves; SIGTERM to the npm process stops the server with it, its port closed", async () => {
    const database = await createTestDatabase(dir);
    const port = await freePort();
    try {
      const served = await serve({
        command: "npm",
        args: ["start"],
        cwd: copy,
        url: `http://127.0.0.1:${port}`,
        probePath: "/healthz",
        // BASE_URL: Vitest exports Vite's ("/"); the server must not inherit it.
        // The generated bootstrap credential in this run's folder: the copy is kept between runs.
        env: { PORT: String(port), HOST: "127.0.0.1", BASE_URL: "", DATABASE_URL: database.url, SECRETS_KEY_FILE: join(dir, "secrets.key"), BOOTSTRAP_CREDENTIAL_FILE: join(dir, "bootstrap-credential.env"), LOG_LEVEL: "info" },
        // The build first: tsc and the console's bundle, on two cores other test files share.
        timeoutMs: 240_000,
      });
      const stopped = await terminate(served.child);
      // The server's lines, after npm's and the build's.
      const logged = served.stdout().split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(logged).toContainEqual(expect.objectContaining({ msg: "listening", listening: `127.0.0.1:${port}`, url: `http://127.0.0.1:${port}` }));
      expect(logged).toContainEqual(expect.objectContaining({ msg: expect.stringMatching(/^bootstrap super-admin created/), file: join(dir, "bootstrap-credential.env") }));
      expect(stopped.tree.length, "the processes npm started").toBeGreaterThan(0);
      expect(stopped.left, `still running after npm exited:\n${served.output()}`).toEqual([]);
      expect(stopped).toMatchObject({ code: 0, signal: null });
      expect(await accepting(port)).toBe(false);
    } finally {
      await database.drop();
    }
  }, 300_000);
});

describe("npm run build, then npm run migrate and npm run serve with only the runtime dependencies", () => {
  it("serves under NODE_ENV=production without compiling, without a devDependency, and without better-sqlite3 on PostgreSQL", async () => {
    const build = await runToEnd("npm", ["run", "build"], {}, { cwd: copy, timeoutMs: 240_000 });
    expect(build.code, build.out).toBe(0);
    // What a deployment ships: the package's manifests, what the build made, the contract and docs it reads.
    const production = join(dir, "production");
    cpSync(join(copy, "package.json"), join(production, "package.json"));
    cpSync(join(root, "package-lock.json"), join(production, "package-lock.json"));
    cpSync(join(copy, "dist"), join(production, "dist"), { recursive: true });
    cpSync(join(root, "generated"), join(production, "generated"), { recursive: true });
    // From npm's cache (npm ci filled it): nothing is downloaded, nothing compiled.
    const install = await runToEnd("npm", ["ci", "--offline", "--omit=dev", "--omit=optional", "--no-audit", "--no-fund"], {}, { cwd: production, timeoutMs: 240_000 });
    expect(install.code, install.out).toBe(0);
    for (const dev of ["tsx", "typescript", "vite", "vitest", "better-sqlite3"]) expect(existsSync(join(production, "node_modules", dev)), dev).toBe(false);

    const database = await createTestDatabase(mkdtempSync(join(dir, "production-database-")));
    const admin = { clientId: "production-admin", clientSecret: "production-admin-secret-0123" };
    const port = await freePort();
    const env = {
      NODE_ENV: "production",
      DATABASE_URL: database.url,
      BASE_URL: `http://127.0.0.1:${port}`,
      SECRETS_KEY: Buffer.alloc(32, 3).toString("base64url"),
      MIGRATE_AT_START: "0",
      BOOTSTRAP_CLIENT_ID: admin.clientId,
      BOOTSTRAP_CLIENT_SECRET: admin.clientSecret,
    };
    try {
      if (database.url.startsWith("sqlite:")) {
        const refused = await runToEnd("npm", ["run", "migrate"], env, { cwd: production, timeoutMs: 60_000 });
        expect(refused.code, refused.out).toBe(2);
        expect(refused.stderr).toContain("DATABASE_URL names an SQLite database, and better-sqlite3 (an optional dependency) is not installed");
        // Installed as npm ci would (its native build is the checkout's: same version, same machine).
        for (const name of ["better-sqlite3", "bindings", "file-uri-to-path"]) cpSync(join(root, "node_modules", name), join(production, "node_modules", name), { recursive: true });
      }
      const migrated = await runToEnd("npm", ["run", "migrate"], env, { cwd: production, timeoutMs: 60_000 });
      expect(migrated.code, migrated.out).toBe(0);
      expect(migrated.stdout).toContain("migrations applied: 0001_identity_and_funds");
      // On a database that has none yet, the rotation makes the first signing key, which the server then signs with.
      const rotated = await runToEnd("npm", ["run", "rotate-signing-key"], env, { cwd: production, timeoutMs: 60_000 });
      expect(rotated.code, rotated.out).toBe(0);
      const kid = /new signing key ([A-Za-z0-9]+):/.exec(rotated.stdout)?.[1];
      expect(kid, rotated.out).toBeDefined();
      const served = await serve({ command: "npm", args: ["run", "serve"], cwd: production, url: `http://127.0.0.1:${port}`, probePath: "/readyz", env: { ...env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" } });
      const api = new Acceptance(served.url, admin);
      const token = await api.token();
      expect(token.status).toBe(200);
      expect(JSON.parse(Buffer.from((token.body.access_token as string).split(".")[0]!, "base64url").toString())).toMatchObject({ kid });
      expect(await api.deliver(await api.hook())).toEqual({ status: 200, execution: "AUTOMATION_EXECUTION_STATE_DONE" });
      expect((await fetch(`${served.url}/console/`)).status).toBe(200);
      if (database.url.startsWith("sqlite:")) {
        // The built commands: a backup of the database it serves, restored into a new file that npm run migrate finds complete.
        const file = join(dir, "production-backup.sqlite");
        const backup = await runToEnd("npm", ["run", "backup", "--", file], env, { cwd: production, timeoutMs: 60_000 });
        expect(backup.code, backup.out).toBe(0);
        expect(backup.stdout).toContain(`backup written: ${file}`);
        const restored = `sqlite:${join(dir, "production-restored", "tenant.sqlite")}`;
        const restore = await runToEnd("npm", ["run", "restore", "--", file], { ...env, DATABASE_URL: restored }, { cwd: production, timeoutMs: 60_000 });
        expect(restore.code, restore.out).toBe(0);
        const migrated = await runToEnd("npm", ["run", "migrate"], { ...env, DATABASE_URL: restored }, { cwd: production, timeoutMs: 60_000 });
        expect(migrated.stdout).toContain("migrations: none pending");
      }
      const stopped = await terminate(served.child);
      expect(stopped).toMatchObject({ code: 0, signal: null, left: [] });
    } finally {
      await database.drop();
    }
  }, 600_000);
});
