// The fenced code blocks of a guide of the reference (openapi/guides/*.md), and how an answer a guide
// shows compares with what the server answered. A guide holds two kinds of blocks:
//   - code a reader runs: `sh` (bash with curl and jq) and `ts` (a program with the typed client);
//   - what the code before it prints: `json` (compared value by value, see `shownDifferences`) and
//     `text` (each line printed, numbers aside);
//   - a copy of a program of examples/, named by the comment on the line before it
//     (`<!-- examples/verifying/verify.py -->`): the file whole, which a test of its own runs.
// Any other language is refused, so that no block escapes the test.

export type RunnableLanguage = "sh" | "ts";
export type ShownLanguage = "json" | "text";
export type ExampleLanguage = "sh" | "ts" | "js" | "python" | "java";

export interface Block {
  lang: RunnableLanguage | ShownLanguage | ExampleLanguage;
  code: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
  /** The file of examples/ the block is a copy of, when it is one. */
  example?: string;
}

const RUNNABLE: readonly string[] = ["sh", "ts"];
const SHOWN: readonly string[] = ["json", "text"];
const EXAMPLE: readonly string[] = ["sh", "ts", "js", "python", "java"];
const EXAMPLE_COMMENT = /^<!-- (examples\/[\w./-]+) -->$/;

/** Code a reader runs against the sandbox, as opposed to what it prints, or a copy of an example (run by its own test). */
export const isRunnable = (block: Block): block is Block & { lang: RunnableLanguage } => RUNNABLE.includes(block.lang) && block.example === undefined;

/** The fenced blocks of `markdown`, in order; throws on a block of a language the test does not run or compare. */
export function fencedBlocks(markdown: string, file: string): Block[] {
  const blocks: Block[] = [];
  let open: { lang: string; line: number; lines: string[]; example: string | undefined } | undefined;
  let before = "";
  for (const [i, line] of markdown.split("\n").entries()) {
    if (open === undefined) {
      const fence = /^```(\S*)/.exec(line);
      if (fence) open = { lang: fence[1]!, line: i + 1, lines: [], example: EXAMPLE_COMMENT.exec(before)?.[1] };
      else if (line.trim() !== "") before = line;
    } else if (line === "```") {
      if (open.example !== undefined) {
        if (!EXAMPLE.includes(open.lang)) throw new Error(`${file}:${open.line}: a \`\`\`${open.lang} copy of ${open.example}: examples are shown as ${EXAMPLE.join(", ")} blocks only`);
      } else if (![...RUNNABLE, ...SHOWN].includes(open.lang)) throw new Error(`${file}:${open.line}: a \`\`\`${open.lang} block: guides hold sh, ts, json and text blocks only, and copies of examples/`);
      blocks.push({ lang: open.lang as Block["lang"], code: open.lines.join("\n"), line: open.line, ...(open.example === undefined ? {} : { example: open.example }) });
      open = undefined;
      before = "";
    } else open.lines.push(line);
  }
  if (open) throw new Error(`${file}:${open.line}: a block that is never closed`);
  return blocks;
}

/**
 * The status a `sh` block's last request answers, when the block says so in a comment
 * (`# Answers 409 DUPLICATE_EVENT: ...`); every other request must answer 2xx.
 */
export function declaredRefusal(code: string): { status: number; reason: string | undefined } | undefined {
  const m = /^\s*# Answers (\d{3})(?: ([A-Z][A-Z0-9_]+))?/m.exec(code);
  return m ? { status: Number(m[1]), reason: m[2] } : undefined;
}

const TIMESTAMP = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g;
const ENUM_LIKE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/;

/** A value that differs from run to run: a timestamp, or an id (a word of 8 or more characters mixing letters and digits, or cases). */
const varies = (text: string) =>
  new RegExp(`^${TIMESTAMP.source}$`).test(text) ||
  (/^[A-Za-z0-9_.:-]{8,}$/.test(text) && !ENUM_LIKE.test(text) && ((/\d/.test(text) && /[A-Za-z]/.test(text)) || (/[a-z]/.test(text) && /[A-Z]/.test(text))));

/** A URL as a guide may show it: the reader's server differs, and ids in the path too; the rest of the path is the same. */
const urlShape = (text: string) => (/^https?:\/\//.test(text) ? new URL(text).pathname.split("/").map((segment) => (varies(segment) ? "<id>" : segment)).join("/") : undefined);

/** Prose of an answer (a trace line) with its timestamps, which differ from run to run, blanked. */
const withoutTimestamps = (text: string) => text.replace(TIMESTAMP, "<time>");

const kindOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/**
 * Where the real answer differs from the answer shown: the same keys at every level, arrays of the
 * same length, and the same values, except that a value which differs from run to run (timestamps
 * and ids) need only be of the same kind, a URL the same path (ids aside) on any server, and
 * timestamps inside prose are not compared.
 */
export function shownDifferences(shown: unknown, real: unknown, at = "$"): string[] {
  if (kindOf(shown) !== kindOf(real)) return [`${at}: shown ${JSON.stringify(shown)}, answered ${JSON.stringify(real)}`];
  if (Array.isArray(shown) && Array.isArray(real)) {
    if (shown.length !== real.length) return [`${at}: shown ${shown.length} items, answered ${real.length}`];
    return shown.flatMap((item, i) => shownDifferences(item, real[i], `${at}[${i}]`));
  }
  if (typeof shown === "object" && shown !== null) {
    const s = shown as Record<string, unknown>;
    const r = real as Record<string, unknown>;
    const onlyShown = Object.keys(s).filter((k) => !(k in r));
    const onlyReal = Object.keys(r).filter((k) => !(k in s));
    return [
      ...(onlyShown.length > 0 ? [`${at}: shown but not answered: ${onlyShown.join(", ")}`] : []),
      ...(onlyReal.length > 0 ? [`${at}: answered but not shown: ${onlyReal.join(", ")}`] : []),
      ...Object.keys(s)
        .filter((k) => k in r)
        .flatMap((k) => shownDifferences(s[k], r[k], `${at}.${k}`)),
    ];
  }
  if (typeof shown === "string" && typeof real === "string") {
    if (urlShape(shown) !== undefined) return urlShape(shown) === urlShape(real) ? [] : [`${at}: shown ${JSON.stringify(shown)}, answered ${JSON.stringify(real)}`];
    if (varies(shown)) return varies(real) ? [] : [`${at}: shown ${JSON.stringify(shown)}, answered ${JSON.stringify(real)}`];
    return withoutTimestamps(shown) === withoutTimestamps(real) ? [] : [`${at}: shown ${JSON.stringify(shown)}, answered ${JSON.stringify(real)}`];
  }
  return shown === real ? [] : [`${at}: shown ${JSON.stringify(shown)}, answered ${JSON.stringify(real)}`];
}

/** The lines of a `text` block that the program did not print (numbers aside: they are counters, times and ids). */
export function missingLines(shown: string, printed: string): string[] {
  const normal = (line: string) => line.trim().replace(/\d+/g, "0");
  const printedLines = new Set(printed.split("\n").map(normal));
  return shown.split("\n").filter((line) => line.trim() !== "" && !printedLines.has(normal(line)));
}
