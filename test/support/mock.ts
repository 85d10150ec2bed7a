// Runs the Prism mock exactly as `npm run mock` does (mock/server.mjs), on an ephemeral port.
import { fileURLToPath } from "node:url";
import { freePort, serve, type Served } from "./process.js";

const launcher = fileURLToPath(new URL("../../mock/server.mjs", import.meta.url));

export async function startMock(): Promise<Served> {
  const port = await freePort();
  return serve({
    command: process.execPath,
    args: [launcher, "--port", String(port)],
    url: `http://127.0.0.1:${port}`,
    probePath: "/api/v1/funds/policy",
    timeoutMs: 60_000,
  });
}
