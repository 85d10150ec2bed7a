// Runs the mock as a partner does, `npm run mock` (--silent: without npm's banner), on an ephemeral port.
import { fileURLToPath } from "node:url";
import { freePort, serve, type Served } from "./process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

export async function startMock(): Promise<Served> {
  const port = await freePort();
  return serve({
    command: "npm",
    args: ["run", "--silent", "mock", "--", "--port", String(port)],
    cwd: root,
    url: `http://127.0.0.1:${port}`,
    probePath: "/healthz",
    timeoutMs: 60_000,
  });
}
