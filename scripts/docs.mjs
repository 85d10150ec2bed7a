#!/usr/bin/env node
// Builds the Redoc page, one self-contained HTML file: the prerendered reference and Redoc itself
// (`--inlineBundle`: the copy that ships with @redocly/cli, so the page matches its version), so
// search, the menu and the samples work with no network, served at /docs or opened from disk.
// (Redoc 3 is an ES module: a page opened from disk cannot import it from a file next to it.)
// `npm run generate` runs it too, so generated/docs.html never lags the contract. `--out DIR`
// writes elsewhere. Redoc's layout and search text are corrected here (LAYOUT, SEARCH_TEXT).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const outFlag = process.argv.indexOf("--out");
const outDir = outFlag > 0 ? resolve(process.argv[outFlag + 1] ?? "") : join(root, "generated");
const page = join(outDir, "docs.html");

// Redoc's sidebar footer shows Redocly's logo from Redocly's CDN, with no option to turn it off: the
// page would ask another origin for it. `data:,` is no image, so Redoc hides it (its onError).
const THIRD_PARTY_IMAGES = ["https://cdn.redoc.ly/redoc/logo-mini-full.svg", "https://cdn.redoc.ly/redoc/logo-mini.svg"];

/**
 * What Redoc's theme has no option for. A section without samples (the introduction, a guide) keeps
 * the middle panel's half of the row, its right half empty: it takes the whole row, and the few
 * code lines longer than that wrap (Redoc's --code-wrap) rather than hide past the block's edge;
 * a copy still copies them as written. A code block's copy button sits over its first line (the
 * typed-client sample's import was cut under it): the controls take a row of their own above it.
 */
const LAYOUT = `<style>
@media screen and (min-width: 1280px) {
  [data-testid="middle-panel"]:has(+ [data-testid="right-panel"]:empty) { width: 100%; }
}
[data-testid="middle-panel"]:has(+ [data-testid="right-panel"]:empty) pre { --code-wrap: pre-wrap; overflow-wrap: anywhere; }
[data-component-name="CodeBlock/CodeBlockControls"] { position: static; display: flex; justify-content: flex-end; }
</style>`;

/**
 * The text Redoc's search indexes and shows: its Markdown-to-text function joins text nodes with
 * nothing between them, so the words at a line break or between two paragraphs run together
 * ("header.The token"). The patched one puts a space at line breaks and before each block after the
 * first (a heading's own text, which makes its anchor, has neither, so anchors stay as they are).
 */
const SEARCH_TEXT = {
  from: /function (\w+)\(e\)\{let t=\[\];function n\(e\)\{if\(!(\w+)\(e\)\)\{typeof e\.attributes\?\.content==`string`&&t\.push\(e\.attributes\.content\);/g,
  to: (_, name, skipped) =>
    `function ${name}(e){let t=[];function n(e){if(!${skipped}(e)){` +
    `if(t.length&&["paragraph","heading","item","fence","blockquote","th","td","hr"].includes(e.type))t.push(" ");` +
    `typeof e.attributes?.content==\`string\`&&t.push(e.attributes.content);` +
    `(e.type==="softbreak"||e.type==="hardbreak")&&t.push(" ");`,
};

execFileSync(
  join(root, "node_modules/.bin/redocly"),
  ["build-docs", join(outDir, "openapi.yaml"), "--config", join(root, "redocly.yaml"), "-o", page, "--title", "Tenant API reference", "--inlineBundle"],
  { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } },
);
let html = readFileSync(page, "utf8");
for (const url of THIRD_PARTY_IMAGES) {
  // A Redoc upgrade that moves them must be looked at again (test/e2e/docs.test.ts counts requests elsewhere).
  if (!html.includes(url)) throw new Error(`docs.mjs: ${url} is no longer in Redoc's bundle; check what the page loads now`);
  html = html.replaceAll(url, "data:,");
}
// Like the logo's URLs: a Redoc upgrade that changes the function must be looked at again.
if (html.match(SEARCH_TEXT.from)?.length !== 1) throw new Error("docs.mjs: Redoc's Markdown-to-text function for search is not found once; check how search text is made now");
html = html.replace(SEARCH_TEXT.from, SEARCH_TEXT.to).replace("</head>", `${LAYOUT}</head>`);
writeFileSync(page, html);
console.log(`docs written to ${page}`);
