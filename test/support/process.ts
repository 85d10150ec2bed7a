// Starts a real child process that serves HTTP and waits until it answers.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface RunResult {
  code: number | null;
  /** stdout and stderr together, in the order they came. */
  out: string;
  stdout: string;
  stderr: string;
}

/** Runs `command args` to its end; answers its exit code and its output. */
export function runToEnd(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
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
  output: () => string;
  stop: () => Promise<void>;
}

/** A port that was free a moment ago, from the kernel's ephemeral range. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      s.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** Spawns `command args` and polls `probePath` on `url` until it answers, or fails with the child's output. */
export async function serve(opts: {
  command: string;
  args: string[];
  url: string;
  probePath: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}): Promise<Served> {
  const child = spawn(opts.command, opts.args, {
    env: { ...process.env, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout?.on("data", (d: Buffer) => (log += d.toString()));
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
      return { url: opts.url, child, output: () => log, stop };
    } catch {
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  await stop();
  throw new Error(`${opts.command} did not answer within the timeout:\n${log}`);
}
