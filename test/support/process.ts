// Real child processes: run to their end, or serving HTTP until they answer; and, stopped as a
// process manager stops them, whether every process they started ended with them.
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, readdirSync, readFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface RunResult {
  code: number | null;
  /** stdout and stderr together, in the order they came. */
  out: string;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command args` to its end (or SIGTERM after `timeoutMs`: code null), with `input` on its
 * standard input (empty when not given); answers its exit code and its output.
 */
export function runToEnd(command: string, args: string[], env: NodeJS.ProcessEnv = {}, options: { cwd?: string; timeoutMs?: number; input?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"], ...(options.cwd ? { cwd: options.cwd } : {}), ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}) });
    // A child that exits without reading its input is not an error of the run.
    child.stdin.on("error", () => undefined).end(options.input);
    let out = "";
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => ((out += d.toString()), (stdout += d.toString())));
    child.stderr.on("data", (d: Buffer) => ((out += d.toString()), (stderr += d.toString())));
    child.once("error", reject);
    // "close", not "exit": every byte of both streams has been read by then.
    child.once("close", (code) => resolve({ code, out, stdout, stderr }));
  });
}

/** An example program of the docs run in its own language's runtime, from its examples/ folder. */
export interface ExampleProgram {
  language: string;
  file: string;
  command: [string, ...string[]];
  /** The commands it needs on PATH, and the Debian packages that bring them. */
  needs: string[];
  packages: string;
}

/** Whether `name` is an executable file in a folder of PATH. */
export function onPath(name: string): boolean {
  return (process.env.PATH ?? "").split(delimiter).some((folder) => {
    try {
      accessSync(join(folder, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The sender's command (scripts/send-webhook.ts) as a partner runs it, through tsx. */
export function runSendWebhook(args: string[]): Promise<RunResult> {
  return runToEnd(join(root, "node_modules/.bin/tsx"), [join(root, "scripts/send-webhook.ts"), ...args], { BASE_URL: "" });
}

/** The spend command (scripts/spend.ts) as a partner runs it, through tsx; `env` on top of a clean BASE_URL and credentials. */
export function runSpend(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return runToEnd(join(root, "node_modules/.bin/tsx"), [join(root, "scripts/spend.ts"), ...args], { BASE_URL: "", CLIENT_ID: "", CLIENT_SECRET: "", ...env });
}

export interface Served {
  url: string;
  child: ChildProcess;
  /** stdout and stderr together, in the order they came. */
  output: () => string;
  stdout: () => string;
  stop: () => Promise<void>;
}

/** A port that was free a moment ago, from the kernel's ephemeral range. */
export async function freePort(): Promise<number> {
  // A port handed out is not bound until its user listens: the system may offer it again meanwhile
  // (a server's PORT and METRICS_PORT asked for one after the other), so this process never hands one out twice.
  for (;;) {
    const port = await unboundPort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

const handedOut = new Set<number>();

function unboundPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      s.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** Spawns `command args` (in `cwd`) and polls `probePath` on `url` until it answers, or fails with the child's output. */
export async function serve(opts: {
  command: string;
  args: string[];
  url: string;
  probePath: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
}): Promise<Served> {
  const child = spawn(opts.command, opts.args, {
    env: { ...process.env, ...opts.env },
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  let stdout = "";
  child.stdout?.on("data", (d: Buffer) => ((log += d.toString()), (stdout += d.toString())));
  child.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  const deadline = Date.now() + (opts.timeoutMs ?? 45_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${opts.command} exited ${child.exitCode}:\n${log}`);
    try {
      await fetch(opts.url + opts.probePath, { signal: AbortSignal.timeout(1000) });
      return { url: opts.url, child, output: () => log, stdout: () => stdout, stop };
    } catch {
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  await stop();
  throw new Error(`${opts.command} did not answer within the timeout:\n${log}`);
}

/** The fields of /proc/<pid>/stat after the command name (state, ppid, ...); undefined once the process is gone. */
function procStat(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid ...": the command name may hold spaces and parentheses.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** The processes descended from `pid` now: its children, theirs, and so on (Linux: read from /proc). */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc").filter((name) => /^[0-9]+$/.test(name))) {
    const ppid = Number(procStat(entry)?.[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const child of children.get(parent) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** Whether process `pid` runs: a zombie (ended, not yet reaped by its parent) does not. */
export function running(pid: number): boolean {
  const state = procStat(pid)?.[0];
  return state !== undefined && state !== "Z";
}

/** Whether `host`:`port` accepts a TCP connection. */
export function accepting(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

export interface Terminated {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The processes `child` had started, just before the signal. */
  tree: number[];
  /** Those of them still running 5 seconds after `child` exited (then killed, so that none outlives the test). */
  left: number[];
}

/** Stops `child` as a process manager does: SIGTERM to its PID alone, not to its process group. */
export async function terminate(child: ChildProcess): Promise<Terminated> {
  // Already ended: its PID may be another process's by now.
  if (child.exitCode !== null || child.signalCode !== null) return { code: child.exitCode, signal: child.signalCode, tree: [], left: [] };
  const tree = descendants(child.pid!);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.kill("SIGTERM");
  const { code, signal } = await exited;
  const deadline = Date.now() + 5000;
  while (tree.some(running) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const left = tree.filter(running);
  for (const pid of left) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // ended in the meantime
    }
  }
  return { code, signal, tree, left };
}
