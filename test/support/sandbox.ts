// `npm run sandbox` started as a partner starts it: a real process whose printed JSON (--json) is
// all a test knows of it.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { SandboxInfo } from "../../scripts/sandbox/report.js";
import { terminate, type Terminated } from "./process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface RunningSandbox {
  info: SandboxInfo;
  printed: string;
  /** SIGTERM to the npm process alone; answers how it ended. */
  stop: () => Promise<Terminated>;
}

/** Starts the sandbox with npm (--silent: no banner before the JSON) and resolves with what it printed once seeding is done. */
export async function startSandbox(port: number, dir: string): Promise<RunningSandbox> {
  const child: ChildProcess = spawn("npm", ["run", "--silent", "sandbox", "--", "--port", String(port), "--dir", dir, "--json"], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const info = await new Promise<SandboxInfo>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      try {
        resolve(JSON.parse(out) as SandboxInfo);
      } catch {
        // not all of it yet
      }
    });
    child.once("exit", (code) => reject(new Error(`the sandbox exited (${code}):\n${out}\n${err}`)));
  });
  return { info, printed: out, stop: () => terminate(child) };
}
