// Runs the mock exactly as `npm run mock` does (mock/server.ts through tsx), on an ephemeral port.
import { fileURLToPath } from "node:url";
import { freePort, serve, type Served } from "./process.js";

const launcher = fileURLToPath(new URL("../../mock/server.ts", import.meta.url));

export async function startMock(): Promise<Served> {
  const port = await freePort();
  return serve({
    command: process.execPath,
    args: ["--import", "tsx", launcher, "--port", String(port)],
    url: `http://127.0.0.1:${port}`,
    probePath: "/healthz",
    timeoutMs: 60_000,
  });
}
