// `npm start` as a process manager runs it (systemd, a container runtime, a supervisor): it builds,
// serves, and when the npm process alone is sent SIGTERM, the server stops with it: no process it
// started runs on, and its port is closed. On the test database (SQLite, or PostgreSQL in that leg).
//
// It runs in a copy of the package's sources (node_modules linked), kept between runs in the
// system's temporary folder: the build npm start makes would otherwise rewrite the checkout's
// dist/console while other test files serve it, and a kept copy keeps its dist/, so that the
// build's compiler (tsc -b) finds it current and the test pays for a full build only when the
// sources changed (the PostgreSQL leg reuses the SQLite leg's).
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/database.js";
import { accepting, freePort, serve, terminate } from "../support/process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** What `npm run build` compiles and bundles, and what the server reads at run time (generated/). */
const PACKAGE = ["package.json", "tsconfig.json", "tsconfig.build.json", "src", "generated", "scripts", "console"];

/** The kept copy of this checkout's package: its sources copied afresh with their modification times, its dist/ left. */
function packageCopy(): string {
  const copy = join(tmpdir(), `tenant-api-npm-start-${createHash("sha256").update(root).digest("hex").slice(0, 12)}`);
  for (const entry of PACKAGE) {
    rmSync(join(copy, entry), { recursive: true, force: true });
    cpSync(join(root, entry), join(copy, entry), { recursive: true, preserveTimestamps: true });
  }
  rmSync(join(copy, "node_modules"), { force: true });
  symlinkSync(join(root, "node_modules"), join(copy, "node_modules"));
  return copy;
}

let dir: string;
let copy: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tenant-npm-start-"));
  copy = packageCopy();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("npm start", () => {
  it("builds and serves; SIGTERM to the npm process stops the server with it, its port closed", async () => {
    const database = await createTestDatabase(dir);
    const port = await freePort();
    try {
      const served = await serve({
        command: "npm",
        args: ["start"],
        cwd: copy,
        url: `http://127.0.0.1:${port}`,
        probePath: "/healthz",
        // BASE_URL: Vitest exports Vite's ("/"); the server must not inherit it.
        env: { PORT: String(port), HOST: "127.0.0.1", BASE_URL: "", DATABASE_URL: database.url, SECRETS_KEY_FILE: join(dir, "secrets.key"), LOG_LEVEL: "warn" },
        // The build first: tsc and the console's bundle, on two cores other test files share.
        timeoutMs: 240_000,
      });
      expect(served.output()).toContain(`Tenant API listening on http://127.0.0.1:${port}`);
      const stopped = await terminate(served.child);
      expect(stopped.tree.length, "the processes npm started").toBeGreaterThan(0);
      expect(stopped.left, `still running after npm exited:\n${served.output()}`).toEqual([]);
      expect(stopped).toMatchObject({ code: 0, signal: null });
      expect(await accepting(port)).toBe(false);
    } finally {
      await database.drop();
    }
  }, 300_000);
});
