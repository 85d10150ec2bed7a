// docs/operating.md's configuration table and the variables the server reads cannot drift apart:
// every variable src/ reads from the environment is in the table, and every variable the table
// lists is named in src/.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const HEADING = "## Configuration (environment)";

/** Read from the environment, but set by npm, not by whoever runs the server. */
const NOT_CONFIGURATION = new Set(["INIT_CWD"]);

/** The rows of the configuration table. */
function tableRows(): string[] {
  const doc = readFileSync(join(ROOT, "docs/operating.md"), "utf8");
  const section = doc.split(`\n${HEADING}\n`)[1]?.split(/\n## /)[0];
  if (section === undefined) throw new Error(`docs/operating.md has no "${HEADING}" section`);
  return section.split("\n").filter((line) => line.startsWith("| `"));
}

/** Every TypeScript source of src/. */
const sources = (): string[] =>
  readdirSync(join(ROOT, "src"), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .map((name) => readFileSync(join(ROOT, "src", name), "utf8"));

/** The variables src/ reads: `env.NAME`, `env["NAME"]`, and the name given to a reader of `env`. */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  for (const text of sources())
    for (const m of text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)|\benv\["([A-Z][A-Z0-9_]+)"\]|\(env, "([A-Z][A-Z0-9_]+)"/g))
      names.add((m[1] ?? m[2] ?? m[3])!);
  return names;
}

describe("docs/operating.md's configuration table", () => {
  it("names every variable the server reads", () => {
    const table = tableRows().join("\n");
    const read = [...variablesRead()].filter((name) => !NOT_CONFIGURATION.has(name));
    expect(read.length).toBeGreaterThan(40);
    expect(read.filter((name) => !new RegExp(`\\b${name}\\b`).test(table))).toEqual([]);
  });

  it("lists only variables src/ names", () => {
    const listed = tableRows().flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
    expect(listed.length).toBeGreaterThan(40);
    const src = sources().join("\n");
    expect(listed.filter((name) => !new RegExp(`\\b${name}\\b`).test(src))).toEqual([]);
  });
});
