#!/usr/bin/env node
// The mock partner teams code against: Prism over the bundled contract, answering with the
// contract's examples and refusing (--errors) requests that break the contract.
// `npm run mock` runs it on 127.0.0.1:4010; `--port N` and `--host H` change that.
import { spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
};

const prism = spawn(
  join(root, "node_modules/.bin/prism"),
  ["mock", "--errors", "--host", arg("--host", "127.0.0.1"), "--port", arg("--port", "4010"), join(root, "generated/openapi.yaml")],
  { stdio: "inherit" },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => prism.kill(signal));
prism.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
