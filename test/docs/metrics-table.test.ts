// docs/operating.md's table of metrics and the series src/metrics/ defines cannot drift apart: the
// table lists every `tenant_api_` series the server can expose, and no other.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const HEADING = "### Metrics";

/** The series named in the first column of the Metrics section's table. */
function documented(): string[] {
  const doc = readFileSync(join(ROOT, "docs/operating.md"), "utf8");
  const section = doc.split(`\n${HEADING}\n`)[1]?.split(/\n#{2,3} /)[0];
  if (section === undefined) throw new Error(`docs/operating.md has no "${HEADING}" section`);
  return section
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`(tenant_api_[a-z0-9_]+)`/g)].map((m) => m[1]!))
    .sort();
}

/** Every series name src/metrics/ writes. */
function defined(): string[] {
  const names = new Set<string>();
  for (const file of readdirSync(join(ROOT, "src/metrics")).filter((name) => name.endsWith(".ts")))
    for (const m of readFileSync(join(ROOT, "src/metrics", file), "utf8").matchAll(/"(tenant_api_[a-z0-9_]+)"/g)) names.add(m[1]!);
  return [...names].sort();
}

describe("docs/operating.md's metrics", () => {
  it("lists exactly the tenant_api_ series src/metrics/ defines", () => {
    expect(defined().length).toBeGreaterThan(20);
    expect(documented()).toEqual(defined());
  });
});
