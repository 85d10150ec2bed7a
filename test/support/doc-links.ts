// The relative links of the written documentation and of the contract, and which of them lead
// nowhere: a file that does not exist, or an anchor that names no heading of the Markdown file it
// points into (GitHub's anchors), or a `$ref` to a file or a JSON pointer that is not there.
// Pure over the files it is given, so that its own test can feed it broken links.
import { dirname, join, normalize } from "node:path";
import { parse } from "yaml";

/** The repository's files, by path relative to its root ("docs/operating.md"). */
export interface Files {
  read(path: string): string | undefined;
  /** A folder: a link to one resolves. */
  isFolder(path: string): boolean;
}

export interface BrokenLink {
  /** The file the link is written in. */
  from: string;
  target: string;
  why: string;
}

/** The lines of Markdown outside its fenced code blocks. */
function outsideFences(markdown: string): string[] {
  const kept: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker) fence = marker[0]!.repeat(marker.length);
    else if (fence !== undefined && marker?.startsWith(fence)) fence = undefined;
    else if (fence === undefined) kept.push(line);
  }
  return kept;
}

/** Every link target of a Markdown text: inline links and images, and reference definitions. */
export function markdownLinks(markdown: string): string[] {
  const text = outsideFences(markdown).join("\n").replace(/(`+)[\s\S]*?\1/g, "code");
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const definitions = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!);
  return [...inline, ...definitions];
}

/** GitHub's anchor of a heading's text: its rendered words, lower case, punctuation dropped, spaces as hyphens. */
export function headingSlug(heading: string): string {
  const rendered = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/<[^>]+>/g, "");
  return rendered.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** The anchors of a Markdown file: one per heading (repeats numbered as GitHub numbers them), and HTML ids. */
export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of outsideFences(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = headingSlug(heading);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const m of line.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

const external = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//");

/** Why a relative Markdown link written in `from` leads nowhere, or undefined when it resolves. */
function markdownLinkProblem(files: Files, from: string, target: string): string | undefined {
  const hash = target.indexOf("#");
  const path = decodeURI(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = path === "" ? from : normalize(join(dirname(from), path));
  if (file.startsWith("..")) return "outside the repository";
  if (files.isFolder(file)) return anchor === undefined ? undefined : "an anchor into a folder";
  const text = files.read(file);
  if (text === undefined) return `no file ${file}`;
  if (anchor === undefined || anchor === "") return undefined;
  if (!/\.md$/i.test(file)) return /^L\d+(-L\d+)?$/.test(anchor) ? undefined : `an anchor into ${file}, which is not Markdown`;
  return markdownAnchors(text).has(anchor) ? undefined : `no heading of ${file} has the anchor #${anchor}`;
}

/** The broken relative links of Markdown files. */
export function brokenMarkdownLinks(files: Files, paths: readonly string[]): BrokenLink[] {
  return paths.flatMap((from) =>
    markdownLinks(files.read(from) ?? "")
      .filter((target) => !external(target))
      .flatMap((target) => {
        const why = markdownLinkProblem(files, from, target);
        return why ? [{ from, target, why }] : [];
      }),
  );
}

/** The value at a JSON pointer (RFC 6901), or undefined. */
function atPointer(document: unknown, pointer: string): unknown {
  if (pointer === "" || pointer === "/") return document;
  let value = document;
  for (const raw of pointer.replace(/^\//, "").split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (value === null || typeof value !== "object" || !(key in value)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** Every string of a YAML document with the key it is the value of. */
function* strings(value: unknown, key = ""): Generator<[key: string, text: string]> {
  if (typeof value === "string") yield [key, value];
  else if (Array.isArray(value)) for (const item of value) yield* strings(item, key);
  else if (value !== null && typeof value === "object")
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) yield* strings(v, k);
}

/**
 * The broken links of the contract's YAML files: a `$ref` to a file that does not exist or a
 * pointer it does not hold, and the relative Markdown links of its descriptions, those of the
 * Markdown files a `$ref` brings in as a description's text included. A link that is an
 * anchor alone addresses the rendered reference (Redoc's page), not a file, and is not checked here.
 */
export function brokenContractLinks(files: Files, paths: readonly string[]): BrokenLink[] {
  const broken: BrokenLink[] = [];
  const parsed = new Map<string, unknown>();
  /** The file's document, parsed once (a Markdown file, the text of a description, as its text); undefined when there is no such file. */
  const documentOf = (file: string): unknown => {
    if (!parsed.has(file)) {
      const text = files.read(file);
      parsed.set(file, text === undefined || /\.md$/i.test(file) ? text : parse(text));
    }
    return parsed.get(file);
  };
  const linkProblems = (from: string, text: string) =>
    markdownLinks(text)
      .filter((target) => !external(target) && !target.startsWith("#"))
      .flatMap((target) => {
        const why = markdownLinkProblem(files, from, target);
        return why ? [{ from, target, why }] : [];
      });
  for (const from of paths) {
    for (const [key, text] of strings(documentOf(from))) {
      if (key === "$ref") {
        const [path = "", pointer] = text.split("#");
        const file = path === "" ? from : normalize(join(dirname(from), decodeURI(path)));
        const target = documentOf(file);
        if (target === undefined) broken.push({ from, target: text, why: `no file ${file}` });
        else if (typeof target === "string") broken.push(...linkProblems(file, target));
        else if (pointer !== undefined && atPointer(target, pointer) === undefined) broken.push({ from, target: text, why: `${file} holds no #${pointer}` });
        continue;
      }
      broken.push(...linkProblems(from, text));
    }
  }
  return broken;
}
