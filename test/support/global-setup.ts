// Once per test run: the console is built from this checkout (the server serves dist/console), and
// Debian's Chromium is installed when missing (scripts/ensure-chromium.sh; a no-op when present).
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { build } from "vite";

const root = fileURLToPath(new URL("../..", import.meta.url));

export default async function setup(): Promise<void> {
  execFileSync("bash", [`${root}scripts/ensure-chromium.sh`], { stdio: "inherit" });
  await build({ configFile: `${root}console/vite.config.ts`, logLevel: "warn" });
}
