// Runs the Prism mock (`npm run mock`'s command) on an ephemeral port over the bundled contract.
import { fileURLToPath } from "node:url";
import { contractPath } from "./contract.js";
import { freePort, serve, type Served } from "./process.js";

const prism = fileURLToPath(new URL("../../node_modules/.bin/prism", import.meta.url));

export async function startMock(): Promise<Served> {
  const port = await freePort();
  return serve({
    command: prism,
    args: ["mock", "--errors", "--host", "127.0.0.1", "--port", String(port), contractPath],
    url: `http://127.0.0.1:${port}`,
    probePath: "/api/v1/funds/policy",
    timeoutMs: 60_000,
  });
}
