// Server and command processes of a release's sources (this checkout's, or an earlier release's
// taken from git), run by Node with tsx's loader: what `npm run serve`, `npm run migrate` and the
// other commands run, without a build.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { freePort, runToEnd, serve, type RunResult, type Served } from "./process.js";

export const root = fileURLToPath(new URL("../..", import.meta.url));

/** A fixed key for the servers of a test that share a database. */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 5).toString("base64url");

// Vitest exports Vite's BASE_URL ("/"); a server must not inherit it.
const CLEAN = { BASE_URL: "", LOG_LEVEL: "warn", HOST: "127.0.0.1" };

/** Node with the loader of `dir`'s tsx (named by its file: the working directory may be another). */
const tsxArgs = (dir: string, entry: string) => ["--import", pathToFileURL(join(dir, "node_modules/tsx/dist/loader.mjs")).href, join(dir, entry)];

/** `dir`'s server (src/main.ts) serving with `env` (in `cwd`) on its PORT, else a free port, once it answers /healthz. */
export async function serveRelease(env: Record<string, string>, dir = root, cwd = dir): Promise<Served> {
  const port = env.PORT ?? String(await freePort());
  return serve({ command: process.execPath, args: tsxArgs(dir, "src/main.ts"), cwd, url: `http://127.0.0.1:${port}`, probePath: "/healthz", env: { ...CLEAN, ...env, PORT: port }, timeoutMs: 90_000 });
}

/** `dir`'s server started with `env` in `cwd` and left to end by itself (SIGTERM after 60 s: code null), for a start it refuses. */
export async function startToEnd(env: Record<string, string>, dir = root, cwd = dir): Promise<RunResult> {
  return runToEnd(process.execPath, tsxArgs(dir, "src/main.ts"), { ...CLEAN, PORT: String(await freePort()), ...env }, { cwd, timeoutMs: 60_000 });
}

/** A command of this checkout (its entry point in src/, e.g. src/commands/migrate.ts for `npm run migrate`) run from its sources with `args` and `env`. */
export const runCommand = (entry: string, args: string[], env: Record<string, string>): Promise<RunResult> =>
  runToEnd(process.execPath, [...tsxArgs(root, entry), ...args], { ...CLEAN, ...env }, { cwd: root, timeoutMs: 120_000 });

/** `npm run migrate` of this checkout, run from its sources. */
export const runMigrate = (env: Record<string, string>): Promise<RunResult> => runCommand("src/commands/migrate.ts", [], env);

/** `npm run rotate-signing-key` of this checkout, run from its sources. */
export const runRotateSigningKey = (env: Record<string, string>): Promise<RunResult> => runCommand("src/commands/rotate-signing-key.ts", [], env);

/** The version of each package a lockfile installs, by its path in node_modules. */
function lockedVersions(lockfile: string): Map<string, string> {
  const packages = (JSON.parse(lockfile) as { packages: Record<string, { version?: string }> }).packages;
  return new Map(Object.entries(packages).flatMap(([path, p]) => (path && p.version ? [[path, p.version]] : [])));
}

/**
 * The sources of the release at `commit`, from this repository's history (a clone with its full
 * history: CI's is), in `dir`, ready to run: node_modules is this checkout's when it holds every
 * package the release's lockfile installs at the same version, else installed by `npm ci`.
 */
export function checkOutRelease(commit: string, dir: string): void {
  try {
    execFileSync("git", ["cat-file", "-e", `${commit}^{commit}`], { cwd: root, stdio: "ignore" });
  } catch {
    throw new Error(`the release's commit ${commit} is not in this clone's history: clone with full history (not --depth)`);
  }
  mkdirSync(dir, { recursive: true });
  execFileSync("sh", ["-c", `git archive --format=tar ${commit} | tar -x -C '${dir}'`], { cwd: root });
  const ours = lockedVersions(readFileSync(join(root, "package-lock.json"), "utf8"));
  const theirs = lockedVersions(readFileSync(join(dir, "package-lock.json"), "utf8"));
  const same = [...theirs].every(([path, version]) => ours.get(path) === version);
  if (same && existsSync(join(root, "node_modules"))) symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  else execFileSync("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"], { cwd: dir, stdio: "ignore" });
}
