// `npm run check:breaking`: compares the bundled contract (generated/openapi.yaml) with the last
// released one (openapi-released/<version>.yaml, the version of CHANGELOG.md's last release) and
// fails on a breaking change whose id is not recorded under `### Breaking` of `## [Unreleased]`.
// Options (for tests): --current FILE, --changelog FILE, --released-dir DIR.
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { parse } from "yaml";
import { lastReleasedVersion, recordedBreakingIds } from "./breaking/changelog.js";
import type { Node } from "./breaking/contract.js";
import { breakingChanges } from "./breaking/operations.js";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const { values } = parseArgs({
  options: {
    current: { type: "string", default: join(root, "generated/openapi.yaml") },
    changelog: { type: "string", default: join(root, "CHANGELOG.md") },
    "released-dir": { type: "string", default: join(root, "openapi-released") },
  },
});
const load = (file: string) => parse(readFileSync(file, "utf8")) as Node;
const shown = (file: string) => relative(process.cwd(), file) || file;

const changelog = readFileSync(values.changelog, "utf8");
const version = lastReleasedVersion(changelog);
const releasedFile = join(values["released-dir"], `${version}.yaml`);
const changes = breakingChanges(load(releasedFile), load(values.current));
const recorded = recordedBreakingIds(changelog);
const missing = changes.filter((c) => !recorded.has(c.id));

console.log(`Breaking changes of ${shown(values.current)} since ${version} (${shown(releasedFile)}): ${changes.length}, ${missing.length} not recorded`);
for (const c of changes) {
  console.log(`  ${recorded.has(c.id) ? "recorded    " : "NOT RECORDED"} \`${c.id}\``);
  console.log(`               ${c.message} [${c.operations.join(", ")}]`);
}
const stale = [...recorded].filter((id) => !changes.some((c) => c.id === id));
if (stale.length > 0) console.log(`Recorded under ### Breaking but not found (reverted?): ${stale.map((id) => `\`${id}\``).join(", ")}`);
if (missing.length > 0) {
  console.error(
    `\n${missing.length} breaking change(s) not recorded. Avoid them, or record each id, in backticks with a line for partners, ` +
      `under "### Breaking" of "## [Unreleased]" in ${shown(values.changelog)}.`,
  );
  process.exit(1);
}
