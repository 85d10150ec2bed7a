// docs/spends.md's "Spend flow" session, as written: every `sh` block of the section, in order, run
// by bash against a real server (only the base URL and the credential file's path are replaced by
// the test server's). It must end without an error and print what the section says it prints. Bash runs with
// its default options, as a user's shell does (no `pipefail`), stopping at the first failure. The
// token block of README.md's "Commands" likewise: the token it gets calls the API.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeCredentialFile } from "../../../src/identity/credential-file.js";
import { runToEnd } from "../../support/process.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";

const root = fileURLToPath(new URL("../../..", import.meta.url));
/** The `sh` blocks of the section of `file` headed `heading`, up to the next heading of its level or above (outside code blocks). */
function shBlocks(file: string, heading: string): string[] {
  const level = heading.indexOf(" ");
  const lines = readFileSync(new URL(`../../../${file}`, import.meta.url), "utf8").split("\n");
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`${file} has no "${heading}" section`);
  const blocks: string[] = [];
  let fence: string | undefined; // the open code block's language
  let body: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (fence === undefined) {
      if (new RegExp(`^#{1,${level}} `).test(line)) break;
      if (line.startsWith("```")) [fence, body] = [line.slice(3), []];
    } else if (line === "```") {
      if (fence === "sh") blocks.push(body.join("\n"));
      fence = undefined;
    } else body.push(line);
  }
  return blocks;
}

/** Runs `script` in bash from `cwd` (the repository's), stopping at the first command that fails (-e). */
const bash = (script: string, env: Record<string, string> = {}, cwd = root) => runToEnd("bash", ["-e", "-c", `cd '${cwd}'\n${script}`], env);

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
  ts.clock.set(Date.now());
});
afterAll(async () => ts?.stop());

describe("the documented shell sessions", () => {
  it("docs/spends.md's Spend flow runs as written: token, authorize, capture, usage, reverse, then the command's authorize, release, decline and list", async () => {
    const script = shBlocks("docs/spends.md", "## Spend flow").join("\n");
    expect(script).toMatch(/^BASE=/m);
    // The credential is read from the file a first start writes, never printed in the docs.
    expect(script).toMatch(/^\. \.\/data\/bootstrap-credential\.env$/m);
    expect(script).not.toMatch(/^CLIENT_(ID|SECRET)=/m);
    const credentials = mkdtempSync(join(tmpdir(), "tenant-spend-flow-"));
    const file = join(credentials, "bootstrap-credential.env");
    await writeCredentialFile(file, BOOTSTRAP, "The test's super-admin");
    const ours = script.replace(/^BASE=.*$/m, `BASE=${ts.url}`).replace(/^\. \.\/data\/bootstrap-credential\.env$/m, `. '${file}'`);
    const run = await bash(ours);
    rmSync(credentials, { recursive: true, force: true });
    expect(run.code, run.out).toBe(0);
    const out = run.stdout;
    const money = (units: string, nanos = 0) => `"currencyCode": "USD",\n\\s*"units": "${units}",\n\\s*"nanos": ${nanos}`;
    // In order: the limit set, the hold, the capture, the usage, the reversal and the usage again.
    const expected = [
      money("100"),
      `"state": "SPEND_AUTHORIZATION_STATE_PENDING"`,
      `"held": \\{\n\\s*${money("15")}`,
      `"state": "SPEND_AUTHORIZATION_STATE_CAPTURED"`,
      `"capturedAmount": \\{\n\\s*${money("12", 500_000_000)}`,
      `"spent": \\{\n\\s*${money("12", 500_000_000)}[\\s\\S]*"remaining": \\{\n\\s*${money("87", 500_000_000)}`,
      `^\\{\n\\s*${money("5")}\n\\}`,
      `"spent": \\{\n\\s*${money("7", 500_000_000)}[\\s\\S]*"remaining": \\{\n\\s*${money("92", 500_000_000)}`,
      // The command: 20 held (72.50 left), released, 500 declined (exit code 1), the one captured spend listed.
      `^\\{\n\\s*${money("72", 500_000_000)}\n\\}`,
      `^SPEND_AUTHORIZATION_STATE_RELEASED$`,
      `^exit code 1$`,
      `spent USD 7.5 \\+ held USD 0 \\+ USD 500 > USD 100 -> decline`,
      `^\\[\n\\s*"[0-9A-Za-z]{16}"\n\\]$`,
    ];
    let rest = out;
    for (const pattern of expected) {
      const m = new RegExp(pattern, "m").exec(rest);
      expect(m, `${pattern}\nnot found, in order, in:\n${rest}`).not.toBeNull();
      rest = rest.slice(m!.index + m![0].length);
    }
    expect(run.stderr.match(/^Idempotency-Key: [0-9a-f-]{36}$/gm)).toHaveLength(3);
  }, 120_000);

  it("the token block of README.md's Commands, as written, sets ACCESS_TOKEN and calls the API with it", async () => {
    const block = shBlocks("README.md", "## Commands").find((b) => b.includes("/auth/v1/token"));
    expect(block).toContain("ACCESS_TOKEN=");
    // In a folder of its own, with the credential file a first start writes there (never the repository's data/).
    const cwd = mkdtempSync(join(tmpdir(), "tenant-readme-"));
    await writeCredentialFile(join(cwd, "data", "bootstrap-credential.env"), BOOTSTRAP, "The test's super-admin");
    const run = await bash(block!.replaceAll("http://localhost:8080", ts.url), {}, cwd);
    rmSync(cwd, { recursive: true, force: true });
    expect(run.code, run.out).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ fundPolicy: { currencyCode: "USD", timeZone: "UTC" } });
  });
});
