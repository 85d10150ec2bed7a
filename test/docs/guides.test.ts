// The guides of the reference (openapi/guides/*.md, each the description of a tag Redoc shows as a
// section of the side menu, x-traitTag) run as a reader runs them, against a seeded sandbox
// (`npm run sandbox`): every `sh` block of a guide in one bash session, in order (so a block may use
// what an earlier one set), with the real curl, jq and openssl; every `ts` block typechecked
// against the client package's types and run by tsx. The environment gives them what a reader
// exports (BASE_URL, CLIENT_ID, CLIENT_SECRET: the super admin's; TOKEN; LISTENER_URL and
// WEBHOOK_SECRET: the sandbox's HMAC listener; JWT_LISTENER_URL, PRIVATE_JWK_FILE and JWT_KID: its
// JWT listener and key; STANDARD_WEBHOOKS_LISTENER_URL and STANDARD_WEBHOOKS_SECRET, GITHUB_LISTENER_URL
// and GITHUB_WEBHOOK_SECRET, STRIPE_LISTENER_URL and STRIPE_AUTOMATION_ID: its listeners of those
// senders; STRIPE_WEBHOOK_SECRET: a secret as Stripe makes one, which the guide gives its listener). Each block must end without an error, its
// requests answer 2xx (or the status and reason its `# Answers` comment declares, for its last
// request), and each `json` or `text` block after it must be what it printed (guide-blocks.ts).
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contract, operations } from "../support/contract.js";
import { callerOf, RECORDING_CURL, recordedRequests, runClientProgram, typecheckClientProject, writeClientProject, type RecordedRequest } from "../support/doc-code.js";
import { declaredRefusal, fencedBlocks, isRunnable, missingLines, shownDifferences, type Block } from "../support/guide-blocks.js";
import { freePort, runToEnd } from "../support/process.js";
import { startSandbox, type RunningSandbox } from "../support/sandbox.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const GUIDES_DIR = join(root, "openapi/guides");

interface Guide {
  tag: string;
  file: string;
  markdown: string;
  blocks: Block[];
}

const traitTags = (contract.tags as { name: string; description?: string; "x-traitTag"?: boolean }[]).filter((t) => t["x-traitTag"] === true);
const guideFiles = readdirSync(GUIDES_DIR).filter((name) => name.endsWith(".md"));
const menuOrder = (tag: string) => traitTags.findIndex((t) => t.name === tag);

/** Each guide file with the tag whose description the bundle made of it, in the order of the side menu (the order they run in). */
const guides: Guide[] = guideFiles
  .map((name) => {
    const markdown = readFileSync(join(GUIDES_DIR, name), "utf8");
    const tag = traitTags.find((t) => t.description === markdown)?.name ?? "";
    return { tag, file: `openapi/guides/${name}`, markdown, blocks: fencedBlocks(markdown, `openapi/guides/${name}`) };
  })
  .sort((a, b) => menuOrder(a.tag) - menuOrder(b.tag));

/** What a runnable block did: its exit code, what it printed, and the requests it made (sh). */
interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  requests: RecordedRequest[];
}

const reasonOf = (body: unknown): string | undefined =>
  ((body as { details?: { reason?: string }[] } | undefined)?.details ?? []).find((d) => typeof d?.reason === "string")?.reason;

/** Runs the `sh` blocks of a guide in one bash session, each block's output and requests kept apart. */
async function runShellBlocks(guide: Guide, dir: string, env: NodeJS.ProcessEnv): Promise<Map<Block, Ran>> {
  const records = join(dir, "records");
  const out = join(dir, "out");
  mkdirSync(records, { recursive: true });
  mkdirSync(out);
  const blocks = guide.blocks.filter((b) => b.lang === "sh" && isRunnable(b));
  const script = [RECORDING_CURL, `cd '${dir}'`];
  blocks.forEach((block, i) => {
    // A group, not a subshell: what a block sets, the next one reads, as in a reader's shell.
    script.push(`{\n${block.code}\n} >'${out}/${i}.out' 2>'${out}/${i}.err'`, `echo $? >'${out}/${i}.code'; cat "$RECORDS/count" >'${out}/${i}.count' 2>/dev/null || echo 0 >'${out}/${i}.count'`);
  });
  const run = await runToEnd("bash", ["-c", script.join("\n")], { ...env, RECORDS: records }, { timeoutMs: 120_000 });
  expect(run.code, run.out).toBe(0);
  const read = (i: number, ext: string) => readFileSync(join(out, `${i}.${ext}`), "utf8");
  let before = 0;
  return new Map(
    blocks.map((block, i) => {
      const after = Number(read(i, "count"));
      const ran = { code: Number(read(i, "code")), stdout: read(i, "out"), stderr: read(i, "err"), requests: recordedRequests(records, before, after) };
      before = after;
      return [block, ran];
    }),
  );
}

/** Writes the `ts` blocks of every guide into one TypeScript project, typechecks it once, and runs each block. */
async function runClientBlocks(dir: string, env: NodeJS.ProcessEnv): Promise<{ typecheck: string; ran: Map<Block, Ran> }> {
  writeClientProject(dir);
  const programs = guides.flatMap((guide, g) => guide.blocks.filter((b) => b.lang === "ts" && isRunnable(b)).map((block, i) => ({ block, file: `guide-${g}-${i}.ts` })));
  for (const { block, file } of programs) writeFileSync(join(dir, file), block.code);
  const typecheck = await typecheckClientProject(dir);
  const ran = new Map<Block, Ran>();
  for (const { block, file } of programs) {
    const run = await runClientProgram(dir, file, env);
    ran.set(block, { code: run.code, stdout: run.stdout, stderr: run.stderr, requests: [] });
  }
  return { typecheck: typecheck.code === 0 ? "" : typecheck.out, ran };
}

/** Why a runnable block did not do what its guide says, if it did not. */
function runProblems(block: Block, ran: Ran | undefined): string[] {
  if (!ran) return ["it did not run"];
  const problems: string[] = [];
  if (ran.code !== 0) problems.push(`it exited ${ran.code}`);
  if (ran.stderr.trim() !== "") problems.push(`it wrote to stderr: ${ran.stderr.trim()}`);
  if (block.lang === "sh") {
    if (/\bcurl\b[^\n]*\s(-o|-w|--output|--write-out)\s/.test(block.code)) problems.push("a curl of a guide prints its answer: no -o or -w");
    const refusal = declaredRefusal(block.code);
    ran.requests.forEach((request, i) => {
      const last = i === ran.requests.length - 1;
      if (last && refusal) {
        if (request.status !== refusal.status) problems.push(`its last request answered ${request.status}, the guide says ${refusal.status}: ${JSON.stringify(request.body)}`);
        if (refusal.reason && reasonOf(request.body) !== refusal.reason) problems.push(`its last request's reason is ${reasonOf(request.body)}, the guide says ${refusal.reason}`);
      } else if (request.status < 200 || request.status > 299) problems.push(`request ${i + 1} answered ${request.status}: ${JSON.stringify(request.body)}`);
    });
    // Every shell block of a guide calls the API: none is there only to set something up, which the reader would have to trust.
    if (ran.requests.length === 0) problems.push("it made no request");
  }
  return problems;
}

/** Why a shown block is not what the runnable block before it printed, if it is not. */
function shownProblems(block: Block, ran: Ran | undefined): string[] {
  if (!ran) return ["no runnable block before it"];
  if (block.lang === "text") return missingLines(block.code, ran.stdout).map((line) => `not printed: ${line}`);
  let shown: unknown;
  let real: unknown;
  try {
    shown = JSON.parse(block.code);
  } catch (error) {
    return [`the block shown is not JSON: ${String(error)}`];
  }
  try {
    real = JSON.parse(ran.stdout);
  } catch {
    return [`the block before it printed no single JSON value: ${ran.stdout}`];
  }
  return shownDifferences(shown, real);
}

/** The guide that moves the sandbox's clock forward (by a month and more). */
const CLOCK_GUIDE = "SandboxClock";

let sandbox: RunningSandbox;
let dir: string;
const ranBlocks = new Map<Block, Ran>();
let typecheck: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "guides-"));
  sandbox = await startSandbox(await freePort(), join(dir, "sandbox"));
  const { info } = sandbox;
  const superAdmin = info.users.find((u) => u.role === "ROLE_SUPER_ADMIN")!;
  const env = {
    BASE_URL: info.baseUrl,
    ...(await callerOf(info.baseUrl, superAdmin)),
    LISTENER_URL: info.hmac.listenerUrl,
    WEBHOOK_SECRET: info.hmac.webhookSecret,
    JWT_LISTENER_URL: info.jwt.listenerUrl,
    PRIVATE_JWK_FILE: info.jwtKey.privateJwkFile,
    JWT_KID: info.jwtKey.kid,
    STANDARD_WEBHOOKS_LISTENER_URL: info.standardWebhooks.listenerUrl,
    STANDARD_WEBHOOKS_SECRET: info.standardWebhooks.webhookSecret,
    GITHUB_LISTENER_URL: info.github.listenerUrl,
    GITHUB_WEBHOOK_SECRET: info.github.webhookSecret,
    STRIPE_LISTENER_URL: info.stripe.listenerUrl,
    STRIPE_AUTOMATION_ID: info.stripe.automationId,
    // What a Stripe endpoint's signing secret looks like: the guide gives it to the listener, which was made with its own.
    STRIPE_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString("hex")}`,
  };
  const runShell = async (which: (guide: Guide) => boolean) => {
    for (const [g, guide] of guides.entries()) {
      if (!which(guide)) continue;
      mkdirSync(join(dir, `sh-${g}`));
      for (const [block, ran] of await runShellBlocks(guide, join(dir, `sh-${g}`), env)) ranBlocks.set(block, ran);
    }
  };
  const [client] = await Promise.all([runClientBlocks(join(dir, "client"), env), runShell((guide) => guide.tag !== CLOCK_GUIDE)]);
  typecheck = client.typecheck;
  for (const [block, ran] of client.ran) ranBlocks.set(block, ran);
  // Last and alone: it moves the sandbox's clock, which every other block reads.
  await runShell((guide) => guide.tag === CLOCK_GUIDE);
}, 300_000);

afterAll(async () => {
  await sandbox?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Why a block that copies a file of examples/ differs from it, if it does: it shows the file whole, as it is. */
function exampleProblems(block: Block & { example: string }): string[] {
  let text: string;
  try {
    text = readFileSync(join(root, block.example), "utf8");
  } catch {
    return [`${block.example} does not exist`];
  }
  return text === `${block.code}\n` ? [] : [`the block is not ${block.example} as it is: copy the file into the guide again`];
}

/** Every block of every guide with the runnable block whose output it shows. */
const cases = guides.flatMap((guide) =>
  guide.blocks.filter((block) => block.example === undefined).map((block, i, ran) => {
    const source = isRunnable(block) ? block : ran.slice(0, i).reverse().find(isRunnable);
    return [`${guide.file}:${block.line} (${block.lang})`, { block, source }] as const;
  }),
);

describe("the guides of the reference", () => {
  it("each file of openapi/guides/ is the description of a tag of the bundled contract that Redoc shows as a section, in the Guides group", () => {
    expect(guides.length).toBeGreaterThan(0);
    expect(guides.filter((g) => g.tag === "").map((g) => g.file)).toEqual([]);
    const groups = contract["x-tagGroups"] as { name: string; tags: string[] }[];
    expect(groups.find((g) => g.name === "Guides")?.tags).toEqual(traitTags.map((t) => t.name));
    // With x-tagGroups, Redoc shows only the tags of a group: every tag is in one.
    expect(groups.flatMap((g) => g.tags).sort()).toEqual((contract.tags as { name: string }[]).map((t) => t.name).sort());
  });

  it("the Redoc page's side menu has an entry for every guide", () => {
    const page = readFileSync(join(root, "generated/docs.html"), "utf8");
    expect(traitTags.filter((t) => !page.includes(`href="/${t.name.toLowerCase()}"`)).map((t) => t.name)).toEqual([]);
  });

  it("each link of a guide into the reference names a tag or an operation of it (Redoc's fragments: #/<tag>, #/<tag>/<operation id>)", () => {
    const tagOf = (op: Record<string, any>) => (op.tags as string[])[0]!.toLowerCase();
    const anchors = new Set([...(contract.tags as { name: string }[]).map((t) => `#/${t.name.toLowerCase()}`), ...operations.map((o) => `#/${tagOf(o.op)}/${o.operationId.toLowerCase()}`)]);
    const broken = guides.flatMap((g) => [...g.markdown.matchAll(/\]\((#[^)]*)\)/g)].map((m) => m[1]!).filter((target) => !anchors.has(target)).map((target) => `${g.file} → ${target}`));
    const relative = guides.flatMap((g) => [...g.markdown.matchAll(/\]\(([^#)][^)]*)\)/g)].map((m) => m[1]!).filter((target) => !/^https?:/.test(target)).map((target) => `${g.file} → ${target}`));
    expect(broken).toEqual([]);
    // The reference is read on its own (a page served at /docs, or a file): a link to a file of the repository leads nowhere there.
    expect(relative).toEqual([]);
  });

  it("the errors guide lists every reason of the contract once, with the status the contract gives it", () => {
    const errors = guides.find((g) => g.file.endsWith("/errors.md"))!;
    const rows = [...errors.markdown.matchAll(/^\|\s*`([A-Z][A-Z0-9_]+)`\s*\|\s*(\d{3})\s*\|/gm)].map((m) => ({ reason: m[1]!, status: m[2]! }));
    const reasons = contract.components.schemas.ErrorReason as { enum: string[]; "x-enumDescriptions": Record<string, string> };
    // Each description opens with "HTTP <status>. " (a leading "400." would render as a list marker in Redoc).
    const statusOf = (reason: string) => /^HTTP (\d{3})\. \S/.exec(reasons["x-enumDescriptions"][reason] ?? "")?.[1];
    expect(reasons.enum.filter((r) => statusOf(r) === undefined)).toEqual([]);
    expect(reasons.enum.filter((r) => !rows.some((row) => row.reason === r))).toEqual([]);
    expect(rows.filter((row, i) => rows.findIndex((r) => r.reason === row.reason) !== i).map((r) => r.reason)).toEqual([]);
    expect(rows.filter((row) => !reasons.enum.includes(row.reason)).map((r) => r.reason)).toEqual([]);
    expect(rows.filter((row) => row.status !== statusOf(row.reason)).map((r) => `${r.reason}: ${r.status}, the contract says ${statusOf(r.reason)}`)).toEqual([]);
  });

  it("the typed-client blocks typecheck against the client package's types", () => {
    expect(typecheck).toBe("");
  });

  const examples = guides.flatMap((guide) => guide.blocks.flatMap((block) => (block.example === undefined ? [] : [[`${guide.file}:${block.line} (${block.example})`, { ...block, example: block.example }] as const])));
  it.each(examples)("%s is the file as it is", (_, block) => {
    expect(exampleProblems(block)).toEqual([]);
  });

  it.each(cases)("%s", (_, { block, source }) => {
    const ran = source ? ranBlocks.get(source) : undefined;
    expect(isRunnable(block) ? runProblems(block, ran) : shownProblems(block, ran), `${block.code}\n--- printed:\n${ran?.stdout ?? ""}`).toEqual([]);
  });
});
