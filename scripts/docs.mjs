#!/usr/bin/env node
// Builds the Redoc page, one self-contained HTML file: the prerendered reference and Redoc itself
// (`--inlineBundle`: the copy that ships with @redocly/cli, so the page matches its version), so
// search, the menu and the samples work with no network, served at /docs or opened from disk.
// (Redoc 3 is an ES module: a page opened from disk cannot import it from a file next to it.)
// `npm run generate` runs it too, so generated/docs.html never lags the contract. `--out DIR`
// writes elsewhere.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const outFlag = process.argv.indexOf("--out");
const outDir = outFlag > 0 ? resolve(process.argv[outFlag + 1] ?? "") : join(root, "generated");
const page = join(outDir, "docs.html");

// Redoc's sidebar footer shows Redocly's logo from Redocly's CDN, with no option to turn it off: the
// page would ask another origin for it. `data:,` is no image, so Redoc hides it (its onError).
const THIRD_PARTY_IMAGES = ["https://cdn.redoc.ly/redoc/logo-mini-full.svg", "https://cdn.redoc.ly/redoc/logo-mini.svg"];

execFileSync(
  join(root, "node_modules/.bin/redocly"),
  ["build-docs", join(outDir, "openapi.yaml"), "--config", join(root, "redocly.yaml"), "-o", page, "--title", "Tenant API reference", "--inlineBundle"],
  { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } },
);
let html = readFileSync(page, "utf8");
for (const url of THIRD_PARTY_IMAGES) {
  // A Redoc upgrade that moves them must be looked at again (test/e2e/docs.test.ts counts requests elsewhere).
  if (!html.includes(url)) throw new Error(`docs.mjs: ${url} is no longer in Redoc's bundle; check what the page loads now`);
  html = html.replaceAll(url, "data:,");
}
writeFileSync(page, html);
console.log(`docs written to ${page}`);
