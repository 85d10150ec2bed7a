// generated/ is derived from openapi/ by `npm run generate` and never edited by hand: a fresh run
// must reproduce the committed files byte for byte.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const fresh = mkdtempSync(join(tmpdir(), "generated-"));
afterAll(() => rmSync(fresh, { recursive: true, force: true }));

describe("generated artifacts", () => {
  it("are what npm run generate makes from openapi/ now", () => {
    execFileSync(process.execPath, [join(root, "scripts/generate.mjs"), "--out", fresh], { stdio: "pipe" });
    for (const file of ["openapi.yaml", "api.d.ts", "enums.ts", "bounds.ts", "server.ts", "idempotency.ts", "docs.html"]) {
      const committed = readFileSync(join(root, "generated", file), "utf8");
      const regenerated = readFileSync(join(fresh, file), "utf8");
      expect(committed === regenerated, `generated/${file} is stale: run npm run generate`).toBe(true);
    }
  }, 120_000);
});
