// Prism, the contract's example-based mock, as a child process on a loopback port of its own: only
// the mock's HTTP layer (front.ts) talks to it.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { contractPath, packageRoot } from "../src/core/package-root.js";

export interface RunningPrism {
  url: string;
  child: ChildProcess;
}

/** A loopback port that was free a moment ago. */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no free port"))));
    });
  });
}

/** Starts `prism mock --errors` on the bundled contract and resolves once it listens. Its log goes to stderr. */
export async function startPrism(): Promise<RunningPrism> {
  const port = await freeLoopbackPort();
  const child = spawn(join(packageRoot, "node_modules/.bin/prism"), ["mock", "--errors", "--host", "127.0.0.1", "--port", String(port), contractPath], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    child.stdout.on("data", (chunk: Buffer) => {
      process.stderr.write(chunk);
      seen += chunk.toString();
      if (seen.includes("Prism is listening")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`prism exited (${code}) before listening`)));
  });
  return { url, child };
}
