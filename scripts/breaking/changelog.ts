// What CHANGELOG.md says to the breaking-change check: the version of the last release (whose
// contract is kept in openapi-released/<version>.yaml) and the ids of the breaking changes accepted
// since, i.e. every `backticked` text under `### Breaking` of `## [Unreleased]`.

/** The lines of the `## ...` section whose heading starts with `heading`, without the heading. */
function section(lines: string[], level: "##" | "###", heading: string): string[] {
  const start = lines.findIndex((l) => l.startsWith(`${level} ${heading}`));
  if (start < 0) return [];
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((l) => l.startsWith("## ") || (level === "###" && l.startsWith("### ")));
  return end < 0 ? rest : rest.slice(0, end);
}

export function recordedBreakingIds(changelog: string): Set<string> {
  const breaking = section(section(changelog.split("\n"), "##", "[Unreleased]"), "###", "Breaking");
  return new Set([...breaking.join("\n").matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!));
}

export function lastReleasedVersion(changelog: string): string {
  const m = /^## \[(?!Unreleased\])([^\]]+)\]/m.exec(changelog);
  if (!m) throw new Error("CHANGELOG.md names no released version (a `## [x.y.z]` heading)");
  return m[1]!;
}
