// Every relative link of README.md, docs/ and the contract (openapi/) leads somewhere: to a file of
// the repository and, with an anchor, to a heading of it. Moving or renaming a section or a file
// without following its links fails here.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { brokenContractLinks, brokenMarkdownLinks, headingSlug, markdownAnchors, type Files } from "../support/doc-links.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const repository: Files = {
  read: (path) => {
    try {
      return readFileSync(join(ROOT, path), "utf8");
    } catch {
      return undefined;
    }
  },
  isFolder: (path) => {
    try {
      return statSync(join(ROOT, path)).isDirectory();
    } catch {
      return false;
    }
  },
};

/** The files under `folder` whose names end with `suffix`, relative to the repository. */
const filesUnder = (folder: string, suffix: string): string[] =>
  readdirSync(join(ROOT, folder), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(suffix))
    .map((name) => relative(ROOT, join(ROOT, folder, name)))
    .sort();

/** A repository held in memory, for the checker's own cases. */
const inMemory = (files: Record<string, string>): Files => ({
  read: (path) => files[path],
  isFolder: (path) => Object.keys(files).some((name) => name.startsWith(`${path}/`)),
});

describe("links of the documentation and the contract", () => {
  it("README.md and every file of docs/: each relative link names a file, and each anchor a heading of it", () => {
    const docs = filesUnder("docs", ".md");
    expect(docs.length).toBeGreaterThan(0);
    expect(brokenMarkdownLinks(repository, ["README.md", ...docs])).toEqual([]);
  });

  it("the contract: each $ref names a file (and what it points to), and each relative link of a description a file", () => {
    const contract = filesUnder("openapi", ".yaml");
    expect(contract).toContain("openapi/openapi.yaml");
    expect(brokenContractLinks(repository, contract)).toEqual([]);
  });
});

describe("the link checker", () => {
  it("reports a missing file, a missing anchor and a missing $ref target, and passes what resolves", () => {
    const files = inMemory({
      "README.md": [
        "# Title",
        "[ok](docs/a.md#the-notify-step) [ok](docs/a.md#twice-1) [ok](#title) [ok](docs) [ok](https://example.com/x.md)",
        "[gone](docs/missing.md) [no heading](docs/a.md#nowhere) [not markdown](b.yaml#x) [a line](b.yaml#L1)",
        "`[in code](docs/missing.md)`",
        "```sh",
        "[in a block](docs/missing.md)",
        "```",
      ].join("\n"),
      "docs/a.md": "# Doc\n\n## The `notify` step\n\n## Twice\n\n## Twice\n\n[back](../README.md#title) [up](../../outside.md)\n",
      "b.yaml": "openapi: 3.1.0\n",
      "openapi/openapi.yaml": [
        "paths:",
        "  /a: { $ref: paths/a.yaml }",
        "  /b: { $ref: paths/missing.yaml }",
        "  /c: { $ref: 'paths/a.yaml#/get' }",
        "  /d: { $ref: 'paths/a.yaml#/put' }",
        "  /e: { $ref: '#/paths/~1a' }",
        "  /f: { $ref: '#/components/none' }",
        "info:",
        "  description: 'See [guide](../docs/a.md#doc), [gone](../docs/none.md), [section](#section/Intro).'",
        "tags:",
        "  - { name: Guide, description: { $ref: guides/g.md } }",
        "  - { name: Gone, description: { $ref: guides/none.md } }",
      ].join("\n"),
      "openapi/paths/a.yaml": "get: {}\n",
      "openapi/guides/g.md": "- a list, not YAML: [errors](#/errors) [doc](../../docs/a.md#twice) [gone](../../docs/gone.md)\n",
    });
    expect(brokenMarkdownLinks(files, ["README.md", "docs/a.md"]).map(({ from, target }) => `${from} → ${target}`)).toEqual([
      "README.md → docs/missing.md",
      "README.md → docs/a.md#nowhere",
      "README.md → b.yaml#x",
      "docs/a.md → ../../outside.md",
    ]);
    expect(brokenContractLinks(files, ["openapi/openapi.yaml"]).map(({ target }) => target)).toEqual([
      "paths/missing.yaml",
      "paths/a.yaml#/put",
      "#/components/none",
      "../docs/none.md",
      "../../docs/gone.md",
      "guides/none.md",
    ]);
  });

  it("computes GitHub's anchors: punctuation dropped, code kept as its text, repeats numbered", () => {
    expect(headingSlug("PostgreSQL, and several instances")).toBe("postgresql-and-several-instances");
    expect(headingSlug("From the shell: `scripts/spend.ts`")).toBe("from-the-shell-scriptsspendts");
    expect(headingSlug("The API reference (Redoc)")).toBe("the-api-reference-redoc");
    expect(headingSlug("Rate limits (scenario 8) — ÉTÉ_x")).toBe("rate-limits-scenario-8--été_x");
    expect([...markdownAnchors("# A\n## A\n```\n# not a heading\n```\n### A\n")]).toEqual(["a", "a-1", "a-2"]);
  });
});
