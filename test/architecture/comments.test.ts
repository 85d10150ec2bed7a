// The rule of comments that docs/architecture.md ("Comments") states, held where a machine can: a
// file header of a few lines, no comment over a few lines inside a function, no benchmark figure in a
// comment of src/, and no migration named by its number outside the migrations.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");
/** The most lines a file header (the `//` lines that open a file) may take: its purpose and a pointer. */
const MAX_HEADER_LINES = 8;
/** The most lines a comment inside a function may take: the why; the detail goes into the docs. */
const MAX_LINES_IN_FUNCTION = 8;

/** Figures a benchmark or a profile measured, which go stale in a comment: they live in bench/RESULTS.md. */
const MEASUREMENTS: readonly RegExp[] = [
  /µs/,
  /\d\s?% (?:of|more|less)\b/,
  /\b(?:a|one|two|three) (?:tenth|fifth|quarter|third|half)s? of [^.;:]*\b(?:CPU|throughput)\b/,
  /\d\s?[x×] (?:faster|slower|more|less|the)\b/,
  /(?:\babout|~) ?\d[\d.,]* ?(?:ns|ms)\b/,
  /\bp(?:50|90|95|99)\b/,
  /\bbench scenario\b/,
];
/** A migration named by its number (`migration 0030`) or its file (`0019-spend-usage-by-instant`). */
const MIGRATION_NUMBER = /\bmigrations?\s+\d{4}\b|\b\d{4}[-_][a-z]/;
const isMigration = (path: string) => path.startsWith("src/storage/migrations/");

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

interface Comment {
  /** The module, relative to the repository. */
  path: string;
  /** The comment's first and last lines (1-based). */
  line: number;
  end: number;
  /** Whether it stands inside a function's body. */
  inFunction: boolean;
  /** Its text on one line: the markers (`//`, `/*`, a JSDoc's `*`) and line breaks read as spaces. */
  text: string;
}

/** Every comment of a module, found by its syntax tree (a `//` inside a string or a regular expression is none). */
function commentsOf(path: string, text: string): Comment[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const ranges = new Map<number, ts.CommentRange>();
  const bodies: { start: number; end: number }[] = [];
  const visit = (node: ts.Node): void => {
    for (const range of [...(ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []), ...(ts.getTrailingCommentRanges(text, node.getEnd()) ?? [])]) ranges.set(range.pos, range);
    if (ts.isFunctionLike(node) && "body" in node && node.body) bodies.push({ start: node.body.getStart(file), end: node.body.getEnd() });
    for (const child of node.getChildren(file)) visit(child);
  };
  visit(file);
  const lineOf = (pos: number) => file.getLineAndCharacterOfPosition(pos).line + 1;
  return [...ranges.values()]
    .sort((a, b) => a.pos - b.pos)
    .map((range) => ({
      path,
      line: lineOf(range.pos),
      end: lineOf(range.end),
      inFunction: bodies.some((body) => body.start < range.pos && range.end < body.end),
      text: text
        .slice(range.pos, range.end)
        .replace(/^\/\/|^\/\*\*?|\*\/$/g, "")
        .replace(/\n\s*\*?/g, " ")
        .replace(/\s+/g, " "),
    }));
}

const sources = modules(SRC).map((file) => ({ path: relative(ROOT, file), text: readFileSync(file, "utf8") }));

/** Comments on consecutive lines read as one (a sentence may go on past its line), each run from its first line. */
function runsOf(comments: Comment[]): Comment[] {
  return comments.reduce<Comment[]>((found, c) => {
    const last = found.at(-1);
    if (last && last.path === c.path && last.inFunction === c.inFunction && c.line === last.end + 1) {
      found[found.length - 1] = { ...last, end: c.end, text: `${last.text} ${c.text}`.replace(/\s+/g, " ") };
    } else found.push(c);
    return found;
  }, []);
}
const runs = sources.flatMap(({ path, text }) => runsOf(commentsOf(path, text)));

/** Where a comment breaks a rule, and the words that do. */
const at = (c: Comment, pattern: RegExp) => {
  const index = c.text.search(pattern);
  return `${c.path}:${c.line}: …${c.text.slice(Math.max(0, index - 40), index + 40)}…`;
};

describe("comments in src/", () => {
  it("reads the comments it judges (the rules below are not met by finding none)", () => {
    expect(runs.length).toBeGreaterThan(1000);
    const sample = 'const a = "// no comment"; const b = /\\/\\/ nor this/; // one\nfunction f() {\n  // two\n  // three\n  return 1;\n}';
    expect(runsOf(commentsOf("x.ts", sample)).map(({ text, inFunction, line, end }) => ({ text, inFunction, line, end }))).toEqual([
      { text: " one", inFunction: false, line: 1, end: 1 },
      { text: " two three", inFunction: true, line: 3, end: 4 },
    ]);
    expect(MEASUREMENTS.some((pattern) => pattern.test("sealing them was 4% of Authorize's CPU"))).toBe(true);
    expect(MIGRATION_NUMBER.test("checked by the one call (migration 0030)")).toBe(true);
  });

  it(`every file header (the \`//\` lines that open a file) is at most ${MAX_HEADER_LINES} lines: what the file is for, and where the reasoning lives`, () => {
    const long = sources
      .map(({ path, text }) => ({ path, lines: text.split("\n").findIndex((line) => !line.startsWith("//")) }))
      .filter(({ lines }) => lines > MAX_HEADER_LINES)
      .map(({ path, lines }) => `${path}: ${lines} lines`);
    expect(long).toEqual([]);
  });

  it(`no comment inside a function is over ${MAX_LINES_IN_FUNCTION} lines`, () => {
    expect(runs.filter((c) => c.inFunction && c.end - c.line + 1 > MAX_LINES_IN_FUNCTION).map((c) => `${c.path}:${c.line}: ${c.end - c.line + 1} lines`)).toEqual([]);
  });

  it("no comment quotes a benchmark's measurement (bench/RESULTS.md keeps them)", () => {
    expect(runs.flatMap((c) => MEASUREMENTS.filter((pattern) => pattern.test(c.text)).map((pattern) => at(c, pattern)))).toEqual([]);
  });

  it("no comment outside the migrations names a migration by its number", () => {
    expect(runs.filter((c) => !isMigration(c.path) && MIGRATION_NUMBER.test(c.text)).map((c) => at(c, MIGRATION_NUMBER))).toEqual([]);
  });
});
