// `npm run mock`: the mock partner teams code against. Prism answers from the contract's examples
// on an internal loopback port; the mock's HTTP layer (front.ts) on the public port refuses what the
// real server refuses, in the contract's `Status` body. `--port N` (default 4010), `--host H`
// (default 127.0.0.1). Run with tsx: it imports the server's own checks from src/.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { boundAddress, listenOn } from "../src/core/listen-address.js";
import { createLogger } from "../src/core/logger.js";
import { answerClientErrors } from "../src/http/client-error.js";
import { createMockApp } from "./front.js";
import { startPrism } from "./prism.js";

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(name);
  return (i > 0 && process.argv[i + 1]) || fallback;
};

const logger = createLogger("warn");
const prism = await startPrism();
const server = createServer(createMockApp({ prismUrl: prism.url, logger }));
answerClientErrors(server, logger);
const host = arg("--host", "127.0.0.1");
const port = Number(arg("--port", "4010"));
try {
  await listenOn(server, port, host, { port: "--port", host: "--host" });
} catch (e) {
  process.stderr.write(`the mock cannot listen: ${(e as Error).message}\n`);
  prism.child.kill("SIGTERM");
  process.exit(2);
}
const bound = boundAddress(server.address() as AddressInfo);
const reached = bound.urls ? `${bound.listening}, reached at ${bound.urls.join(", ")}` : bound.url;
process.stdout.write(`Mock of the tenant API listening on ${reached} (Prism behind it on ${prism.url})\n`);

const stop = (signal: NodeJS.Signals) => {
  server.close();
  server.closeAllConnections();
  prism.child.kill(signal);
};
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => stop(signal));
prism.child.on("exit", (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
