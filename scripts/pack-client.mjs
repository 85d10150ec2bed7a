#!/usr/bin/env node
// Makes the typed client (src/client) an installable package of its own, @tenant/access-api-client:
// compiled ES modules and their declarations, the generated types, an `exports` map, and only
// openapi-fetch and the helper types its client type is built on (which openapi-fetch depends on
// too) as dependencies (this repository's server dependencies stay out). The webhook
// sender is a sub-path export whose one extra dependency, jose, is an optional peer.
//   npm run pack:client   → dist/client/tenant-access-api-client-<version>.tgz (npm's name for a scoped package)
// Prints the tarball's path on its last line.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const outDir = join(root, "dist/client");
const staging = join(outDir, "package");
const repo = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

rmSync(outDir, { recursive: true, force: true });
// The package keeps the repository's layout (src/client next to generated/), so the compiled
// relative imports stay as written.
execFileSync(join(root, "node_modules/.bin/tsc"), ["-p", join(root, "scripts/pack-client.tsconfig.json"), "--outDir", staging], { stdio: "inherit" });
// A declaration file is read by tsc, never emitted: the generated types go in as they are.
copyFileSync(join(root, "generated/api.d.ts"), join(staging, "generated/api.d.ts"));
copyFileSync(join(root, "scripts/pack-client.README.md"), join(staging, "README.md"));

const entry = (name) => ({ types: `./src/client/${name}.d.ts`, default: `./src/client/${name}.js` });
const manifest = {
  name: "@tenant/access-api-client",
  version: repo.version,
  description: "Typed client of the tenant API (openapi-fetch over the contract's generated types): client-credentials tokens, pagination, errors with their reason, and the verification of notifications.",
  type: "module",
  license: repo.license,
  engines: { node: repo.engines.node },
  sideEffects: false,
  exports: { ".": entry("index"), "./webhook-sender": entry("webhook-sender"), "./package.json": "./package.json" },
  types: "./src/client/index.d.ts",
  // The helpers are types only, hence a development dependency here; the client's declarations import them (src/client/fetch-types.ts).
  dependencies: { "openapi-fetch": repo.dependencies["openapi-fetch"], "openapi-typescript-helpers": repo.devDependencies["openapi-typescript-helpers"] },
  peerDependencies: { jose: repo.dependencies.jose },
  peerDependenciesMeta: { jose: { optional: true } },
};
writeFileSync(join(staging, "package.json"), JSON.stringify(manifest, null, 2) + "\n");

mkdirSync(outDir, { recursive: true });
const [packed] = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", outDir], { cwd: staging, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
console.log(join(outDir, packed.filename));
