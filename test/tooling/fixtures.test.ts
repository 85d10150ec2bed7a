// The repository carries every fixture its tests read: a clone in a folder of its own (no shared
// folder beside it) runs them all. The copies of the shared vectors equal the shared files where
// those are beside the repository; nothing else reads outside the repository. `.ci/run` also runs
// every test file that mentions the fixtures from such a clone.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { SHARED_VECTORS, sharedVectors, vectors } from "../support/vectors.js";

const ROOT = resolve(import.meta.dirname, "../..");
/** Where the code the tests run lives (the console's source included), and what configures them. */
const READ = ["test", "scripts", "bench", "src", "mock", "console", "package.json", "vitest.config.ts", "vitest.chaos.config.ts", ".ci"];
/** The one module that knows where the shared folder is, and this test, which names it. */
const ALLOWED = ["test/support/vectors.ts", "test/tooling/fixtures.test.ts"];

/** The files under `path` (or `path` itself), outside node_modules. */
function files(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).filter((name) => name !== "node_modules").flatMap((name) => files(join(path, name)));
}

describe("the fixtures the tests read", () => {
  it.runIf(existsSync(SHARED_VECTORS))("each shared vectors file has its copy in test/fixtures/, equal to it", () => {
    const shared = sharedVectors();
    expect(shared.size).toBeGreaterThan(0);
    for (const [name, value] of shared) expect(vectors(name), name).toEqual(value);
  });

  it("nothing outside test/support/vectors.ts refers to the shared folder beside the repository", () => {
    const outside = /\.\.\/shared\b|\/work\/shared\b|["'`]shared\/vectors/;
    const read = READ.flatMap((entry) => files(join(ROOT, entry))).filter((file) => /\.(ts|tsx|mts|mjs|js|json|sh)$|\/run$/.test(file));
    expect(read.map((file) => relative(ROOT, file))).toContain("test/http/webhooks/intake.test.ts");
    const found = read.filter((file) => !ALLOWED.includes(relative(ROOT, file)) && outside.test(readFileSync(file, "utf8")));
    expect(found.map((file) => relative(ROOT, file))).toEqual([]);
  });
});
