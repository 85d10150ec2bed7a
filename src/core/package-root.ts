// Finds the package root (the folder with package.json) from this module, so the generated assets
// are found both from src/ (tsx, tests) and from dist/src/ (the built server).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

function findRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("package.json not found above " + start);
    dir = parent;
  }
  return dir;
}

export const packageRoot = findRoot(dirname(fileURLToPath(import.meta.url)));
/** package.json's version: what the build info metric and the traces' resource name. */
export const packageVersion = (): string => (JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")) as { version: string }).version;
export const contractPath = join(packageRoot, "generated", "openapi.yaml");
export const docsPath = join(packageRoot, "generated", "docs.html");
/** The admin console as `npm run build` leaves it (see console/). */
export const consoleDir = join(packageRoot, "dist", "console");
