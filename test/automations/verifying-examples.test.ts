// The verifying programs of examples/verifying/ (shell with openssl, Node, Python, Java), each run
// with its own runtime, as a receiver of notifications runs them: a notification signed by the
// server's own signature function (`signature`, src/automations/notify.ts) now is verified, also
// during a rotation with an entry of a version they do not know; the same with its body, id or
// timestamp changed, signed by another secret, or sent too long ago is refused. A program whose
// runtime is not on this machine is skipped, saying so (.ci/run installs them all).
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { signature } from "../../src/automations/notify.js";
import { type ExampleProgram, onPath, runToEnd, type RunResult } from "../support/process.js";

const EXAMPLES = fileURLToPath(new URL("../../examples/verifying/", import.meta.url));

const PROGRAMS: ExampleProgram[] = [
  { language: "shell", file: "verify.sh", command: ["./verify.sh"], needs: ["bash", "openssl", "base64", "od"], packages: "openssl coreutils" },
  { language: "Node", file: "verify.mjs", command: [process.execPath, "verify.mjs"], needs: [], packages: "nodejs" },
  { language: "Python", file: "verify.py", command: ["python3", "verify.py"], needs: ["python3"], packages: "python3" },
  // Run from source as one file: the launcher compiles it, so it needs a JDK, not a JRE alone.
  { language: "Java", file: "Verify.java", command: ["java", "Verify.java"], needs: ["java", "javac"], packages: "default-jdk-headless" },
];

const secret = () => `whsec_${randomBytes(32).toString("base64")}`;
const [current, replaced] = [secret(), secret()];
const id = "exe_9Tg3Hs6Wq1Zc4Nv8_tell";
// A body as the server sends it may hold characters outside ASCII; a final newline is a byte like another.
const body = `${JSON.stringify({ type: "card.lost", userId: "2Qk3mN8rT1vX9yZ0", note: "café ✓" })}\n`;

interface Notification {
  headers: { id: string; timestamp: number; signatures: string };
  body: string;
}

/** A notification as the server sends it now (or `ageSeconds` ago), signed with `secrets`. */
function notification(secrets: string[], ageSeconds = 0): Notification {
  const timestamp = Math.floor(Date.now() / 1000) - ageSeconds;
  return { headers: { id, timestamp, signatures: signature(secrets, id, timestamp, body) }, body };
}

function run(program: ExampleProgram, key: string, { headers, body: sent }: Notification): Promise<RunResult> {
  const [command, ...rest] = program.command;
  const env = { LC_ALL: "C", NOTIFICATION_SECRET: key, WEBHOOK_ID: headers.id, WEBHOOK_TIMESTAMP: String(headers.timestamp), WEBHOOK_SIGNATURE: headers.signatures };
  return runToEnd(command, rest, env, { cwd: EXAMPLES, input: sent, timeoutMs: 90_000 });
}

async function expectVerified(program: ExampleProgram, key: string, sent: Notification): Promise<void> {
  const r = await run(program, key, sent);
  expect({ code: r.code, out: r.out }).toEqual({ code: 0, out: "verified\n" });
}

async function expectRefused(program: ExampleProgram, key: string, sent: Notification): Promise<string> {
  const r = await run(program, key, sent);
  expect(r.code, r.out).toBe(1);
  expect(r.stdout).toMatch(/^refused: \S.*\n$/);
  expect(r.out).not.toContain(key.slice("whsec_".length));
  return r.stdout;
}

for (const program of PROGRAMS) {
  const missing = program.needs.filter((name) => !onPath(name));
  if (missing.length > 0) console.warn(`SKIPPED: the ${program.language} verifying program (examples/verifying/${program.file}): ${missing.join(", ")} not on PATH (apt-get install ${program.packages})`);

  describe.skipIf(missing.length > 0)(`examples/verifying/${program.file} (${program.language})`, () => {
    it("verifies a notification the server signed now; during a rotation, with either secret, an entry of another version ignored", async () => {
      await expectVerified(program, current, notification([current]));
      const rotated = notification([current, replaced]);
      for (const key of [current, replaced]) await expectVerified(program, key, rotated);
      const withV1a = { ...rotated, headers: { ...rotated.headers, signatures: `v1a,${randomBytes(64).toString("base64")} ${rotated.headers.signatures}` } };
      await expectVerified(program, replaced, withV1a);
    }, 240_000);

    it("refuses it with its body, id or timestamp changed, signed by another secret, or sent 10 minutes ago", async () => {
      const sent = notification([current]);
      const changed: Notification[] = [
        { ...sent, body: sent.body.replace("card.lost", "card.found") },
        { ...sent, body: sent.body.trimEnd() },
        { ...sent, headers: { ...sent.headers, id: "exe_9Tg3Hs6Wq1Zc4Nv8_other" } },
        { ...sent, headers: { ...sent.headers, timestamp: sent.headers.timestamp - 1 } },
      ];
      for (const tampered of changed) expect(await expectRefused(program, current, tampered)).toBe("refused: no v1 signature matches\n");
      expect(await expectRefused(program, replaced, sent)).toBe("refused: no v1 signature matches\n");
      expect(await expectRefused(program, current, notification([current], 600))).toBe("refused: webhook-timestamp is not within 5 minutes of now\n");
    }, 240_000);
  });
}
