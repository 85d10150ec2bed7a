// The signing programs of examples/signing/ (shell with openssl and curl, Node, Python, Java), run
// as a sender runs them, each with its own runtime: the signature each computes for every shared
// test vector is the vector's; one event each sends to a real server's listener is accepted and its
// execution recorded with the body sent; and the same program's event, its body changed on the way
// by a relay that keeps the headers, is refused as the contract says (401 INVALID_SIGNATURE). A
// program whose runtime is not on this machine is skipped, saying so (.ci/run installs them all).
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { responseErrors } from "../../support/contract.js";
import { type ExampleProgram, onPath, runToEnd, type RunResult } from "../../support/process.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { vectors, type HmacVector } from "../../support/vectors.js";
import { createHooked, errorInfo, eventsOf, executionsOf, RECEIVE } from "./helpers.js";

const EXAMPLES = fileURLToPath(new URL("../../../examples/signing/", import.meta.url));

const PROGRAMS: ExampleProgram[] = [
  { language: "shell", file: "sign-and-send.sh", command: ["./sign-and-send.sh"], needs: ["bash", "openssl", "curl"], packages: "openssl curl" },
  { language: "Node", file: "sign-and-send.mjs", command: [process.execPath, "sign-and-send.mjs"], needs: [], packages: "nodejs" },
  { language: "Python", file: "sign_and_send.py", command: ["python3", "sign_and_send.py"], needs: ["python3"], packages: "python3" },
  // Run from source as one file: the launcher compiles it, so it needs a JDK, not a JRE alone.
  { language: "Java", file: "SignAndSend.java", command: ["java", "SignAndSend.java"], needs: ["java", "javac"], packages: "default-jdk-headless" },
];

/** Runs `program` in examples/signing/ with `body` on its standard input and `env` on top of this process's. */
function run(program: ExampleProgram, args: string[], env: Record<string, string>, body: string): Promise<RunResult> {
  const [command, ...rest] = program.command;
  // The C locale: what a program sends and prints must not depend on the machine's character set.
  return runToEnd(command, [...rest, ...args], { LC_ALL: "C", LISTENER_URL: "", WEBHOOK_SECRET: "", ...env }, { cwd: EXAMPLES, input: body, timeoutMs: 90_000 });
}

/** What a program printed of its exchange: the event id it sent, the status and the parsed answer. */
function exchange(stdout: string): { eventId: string; status: number; answer: any } {
  const eventId = /^Webhook-Event-Id: (\S+)$/m.exec(stdout)?.[1];
  const status = /^=> (\d{3})$/m.exec(stdout);
  expect(eventId, stdout).toBeDefined();
  expect(status, stdout).not.toBeNull();
  return { eventId: eventId!, status: Number(status![1]), answer: JSON.parse(stdout.slice(status!.index + status![0].length)) };
}

interface Relay {
  url: string;
  close(): Promise<void>;
}

/**
 * A relay between sender and listener that changes each request's body on the way, as a party in
 * the middle would: the headers the sender signed with go on unchanged, and the answer comes back
 * as the server gave it.
 */
async function tamperingRelay(target: string, alter: (body: string) => string): Promise<Relay> {
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (const name of ["content-type", "webhook-timestamp", "webhook-event-id", "webhook-signature"]) headers[name] = String(request.headers[name]);
    const answer = await fetch(target + request.url, { method: "POST", headers, body: alter(Buffer.concat(chunks).toString("utf8")) });
    response.writeHead(answer.status, { "Content-Type": answer.headers.get("content-type") ?? "application/json" });
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let ts: TestServer;
let relay: Relay;
beforeAll(async () => {
  ts = await startTestServer();
  relay = await tamperingRelay(ts.url, (body) => body.replace("card.lost", "card.found"));
});
afterAll(async () => {
  await relay?.close();
  await ts?.stop();
});
// The programs sign with this machine's time; the server's clock follows it.
beforeEach(() => ts.clock.set(Date.now()));

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

for (const program of PROGRAMS) {
  const missing = program.needs.filter((name) => !onPath(name));
  if (missing.length > 0) console.warn(`SKIPPED: the ${program.language} signing program (examples/signing/${program.file}): ${missing.join(", ")} not on PATH (apt-get install ${program.packages})`);

  describe.skipIf(missing.length > 0)(`examples/signing/${program.file} (${program.language})`, () => {
    // A body as a file holds it: several lines, a character outside ASCII, a final newline.
    const body = `{\n  "event": "card.lost",\n  "sender": "${program.language}",\n  "note": "café ✓"\n}\n`;

    it("signs each shared test vector with the vector's signature (--sign-only)", async () => {
      for (const vector of vectors<{ vectors: HmacVector[] }>("webhook-hmac.json").vectors) {
        const r = await run(program, ["--sign-only", vector.timestamp, vector.eventId], { WEBHOOK_SECRET: vector.secret }, vector.body);
        expect(r.code, r.out).toBe(0);
        expect(r.stdout).toBe(`${vector.signature}\n`);
      }
    }, 240_000);

    it("sends one event, signed now under a fresh UUID v4, that the listener accepts: 200, exit 0, its execution holding the body sent", async () => {
      const hooked = await createHooked(ts, { displayName: `Signed in ${program.language}` });
      const r = await run(program, [], { LISTENER_URL: hooked.url, WEBHOOK_SECRET: hooked.secret }, body);
      const { eventId, status, answer } = exchange(r.stdout);
      expect(status, r.out).toBe(200);
      expect(r.code, r.out).toBe(0);
      expect(r.out).not.toContain(hooked.secret);
      expect(eventId).toMatch(UUID_V4);
      expect(responseErrors(RECEIVE, 200, answer)).toEqual([]);
      expect(answer.webhookEvent).toMatchObject({ eventId, outcome: "WEBHOOK_EVENT_OUTCOME_EXECUTED" });
      const [execution, ...others] = await executionsOf(ts.admin, hooked.id);
      expect(others).toEqual([]);
      expect(execution).toMatchObject({ id: answer.webhookEvent.automationExecutionId, eventId, context: { trigger: JSON.parse(body) } });
    }, 120_000);

    it("its event with the body changed on the way is refused: 401 INVALID_SIGNATURE, exit 1, nothing recorded", async () => {
      const hooked = await createHooked(ts, { displayName: `Tampered ${program.language}` });
      const r = await run(program, [], { LISTENER_URL: relay.url + new URL(hooked.url).pathname, WEBHOOK_SECRET: hooked.secret }, body);
      const { status, answer } = exchange(r.stdout);
      expect(status, r.out).toBe(401);
      expect(r.code, r.out).toBe(1);
      expect(responseErrors(RECEIVE, 401, answer)).toEqual([]);
      expect(errorInfo(answer).reason).toBe("INVALID_SIGNATURE");
      expect(await eventsOf(ts.admin, hooked.id)).toEqual([]);
      expect(await executionsOf(ts.admin, hooked.id)).toEqual([]);
    }, 120_000);
  });
}
