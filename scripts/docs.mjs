#!/usr/bin/env node
// Builds the Redoc page (one static HTML file, prerendered) from the bundled contract.
// `npm run generate` runs it too, so generated/docs.html never lags the contract; the server
// serves it at /docs. `--out DIR` writes elsewhere.
import { execFileSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const outFlag = process.argv.indexOf("--out");
const outDir = outFlag > 0 ? resolve(process.argv[outFlag + 1] ?? "") : join(root, "generated");

execFileSync(
  join(root, "node_modules/.bin/redocly"),
  ["build-docs", join(outDir, "openapi.yaml"), "--config", join(root, "redocly.yaml"), "-o", join(outDir, "docs.html"), "--title", "Tenant API reference"],
  { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } },
);
console.log(`docs written to ${join(outDir, "docs.html")}`);
