// The processes of a run: the build, the servers under test and the baseline (each `node` on
// compiled JS, logs to a file), the load generator (bench/driver.ts, forked once), and the tiny
// JWKS server the JWT listeners fetch their keys from.
import { execFileSync, fork, spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { DriverAnswer, DriverMessage, LoadResult, LoadSpec, RequestSpec } from "./load.js";
import { rssMiB } from "./proc.js";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));

const running = new Set<ChildProcess>();

/** Ends every child this run started (by its own handle), e.g. when the run fails half-way. */
export function killAll(): void {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

/** The newest modification time of the files under `paths` (folders walked), in ms. */
function newest(paths: readonly string[]): number {
  let latest = 0;
  const visit = (path: string) => {
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory()) for (const entry of readdirSync(path)) visit(join(path, entry));
    else latest = Math.max(latest, st.mtimeMs);
  };
  for (const p of paths) visit(join(ROOT, p));
  return latest;
}

/**
 * Builds what is out of date: `npm run build` (the server) when a source is newer than
 * dist/src/main.js, and the bench's compiled servers (the baseline, the floor servers) likewise. `force` builds both.
 */
export function build(force: boolean): string[] {
  const built: string[] = [];
  const stale = (output: string, inputs: string[]) => force || newest([output]) === 0 || newest(inputs) > newest([output]);
  if (stale("dist/src/main.js", ["src", "generated", "tsconfig.json", "tsconfig.build.json", "package.json"])) {
    execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
    built.push("server (npm run build)");
  }
  if (stale("dist/bench/servers/baseline.js", ["bench/servers", "bench/tsconfig.build.json", "tsconfig.json"])) {
    execFileSync(join(ROOT, "node_modules/.bin/tsc"), ["-p", join(ROOT, "bench/tsconfig.build.json")], { cwd: ROOT, stdio: "inherit" });
    built.push("baseline and floor servers (bench/tsconfig.build.json)");
  }
  return built;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface NodeProcess {
  url: string;
  pid: number;
  /** Resident set size now, in MiB (VmRSS of /proc/<pid>/status). */
  rssMiB(): number;
  stop(): Promise<void>;
}

/**
 * Starts `node <script>` on compiled JS with `env` (PORT set), its output appended to `logFile`,
 * and waits until `probePath` answers 200.
 */
export async function startNode(opts: { script: string; env: Record<string, string>; port: number; probePath: string; logFile: string; nodeArgs?: string[] }): Promise<NodeProcess> {
  const log = openSync(opts.logFile, "a");
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...opts.env, PORT: String(opts.port) },
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  running.add(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => (running.delete(child), resolve())));
  const url = `http://127.0.0.1:${opts.port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      const r = await fetch(url + opts.probePath, { signal: AbortSignal.timeout(1000) });
      if (r.ok) return { url, pid: child.pid!, rssMiB: () => rssMiB(child.pid!), stop };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`${opts.script} did not start; its log:\n${readFileSync(opts.logFile, "utf8").slice(-4000)}`);
}

export interface Driver {
  /** Runs one scenario in the load-generator process and answers its figures. */
  run(spec: LoadSpec, request: RequestSpec): Promise<LoadResult>;
  stop(): Promise<void>;
}

/** Forks the load generator (bench/driver.ts under tsx): one process for the run, scenarios one at a time. */
export function startDriver(): Driver {
  const child = fork(join(ROOT, "bench/driver.ts"), [], { cwd: ROOT, execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  running.add(child);
  const pending = new Map<number, { resolve: (r: LoadResult) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code) => {
      running.delete(child);
      for (const p of pending.values()) p.reject(new Error(`the load generator exited ${code} without an answer`));
      pending.clear();
      resolve();
    }),
  );
  child.on("message", (answer: DriverAnswer) => {
    const waiting = pending.get(answer.id);
    if (!waiting) return;
    pending.delete(answer.id);
    if (answer.ok) waiting.resolve(answer.result);
    else waiting.reject(new Error(`load generator failed: ${answer.error}`));
  });
  return {
    run: (spec, request) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        child.send({ id, spec, request } satisfies DriverMessage);
      }),
    stop: async () => {
      if (child.connected) child.disconnect();
      await exited;
    },
  };
}

/** Serves JWKS documents on 127.0.0.1: `/<name>.json` answers `documents[name]`. Counts fetches. */
export async function startJwksServer(documents: Record<string, unknown>): Promise<{ url: string; fetches: () => number; close: () => Promise<void> }> {
  let fetches = 0;
  const server: Server = createHttpServer((req, res) => {
    const name = /^\/([A-Za-z0-9_-]+)\.json$/.exec(req.url ?? "")?.[1];
    const doc = name ? documents[name] : undefined;
    if (!doc) return void res.writeHead(404).end();
    fetches++;
    res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "max-age=600" }).end(JSON.stringify(doc));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
