// The example requests the console shows with an HMAC listener (console/src/webhook-example.ts),
// run as a user pastes them, in bash from the repository's root: the curl one-liner with the secret
// filled in and with "$WEBHOOK_SECRET" left to the shell, and the sender script's command. Each is
// accepted and runs its automation on the example body; the curl one with its body changed after
// signing is refused.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { curlCommand, exampleBody, senderCommand, type ExampleTarget } from "../../../console/src/webhook-example.js";
import { runToEnd } from "../../support/process.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { createHooked, errorInfo, executionsOf } from "./helpers.js";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(() => ts?.stop());
// The commands sign with this machine's time; the server's clock follows it.
beforeEach(() => ts.clock.set(Date.now()));

const bash = (script: string, env: Record<string, string> = {}) => runToEnd("bash", ["-euo", "pipefail", "-c", script], { LC_ALL: "C", WEBHOOK_SECRET: "", ...env }, { cwd: ROOT, timeoutMs: 90_000 });

/** A listener of its own, and the console's target for it. */
async function listener(name: string): Promise<{ target: ExampleTarget; secret: string; id: string }> {
  const hooked = await createHooked(ts, { displayName: `Console example: ${name}` });
  // The console puts a user of the tenant in the example.
  const { userId } = await ts.userClient(["ROLE_USER"]);
  return { target: { url: hooked.url, method: "hmac", secret: hooked.secret, baseUrl: ts.url, body: exampleBody(userId) }, secret: hooked.secret, id: hooked.id };
}

describe("the console's example requests for an HMAC listener", () => {
  it("the curl one-liner, its secret filled in, is accepted and runs the automation on the example body", async () => {
    const { target, id } = await listener("curl");
    const r = await bash(curlCommand(target));
    expect(r.code, r.out).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ webhookEvent: { outcome: "WEBHOOK_EVENT_OUTCOME_EXECUTED" } });
    expect((await executionsOf(ts.admin, id)).map((e) => e.context)).toEqual([{ trigger: JSON.parse(target.body), webhook: { eventId: expect.any(String), eventType: null } }]);
  }, 120_000);

  it("the curl one-liner shown without the secret reads it from $WEBHOOK_SECRET", async () => {
    const { target, secret, id } = await listener("curl, secret from the shell");
    const command = curlCommand({ ...target, secret: undefined });
    expect(command).not.toContain(secret);
    const r = await bash(command, { WEBHOOK_SECRET: secret });
    expect(r.code, r.out).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ webhookEvent: { outcome: "WEBHOOK_EVENT_OUTCOME_EXECUTED" } });
    expect(await executionsOf(ts.admin, id)).toHaveLength(1);
  }, 120_000);

  it("the curl one-liner with its body changed after signing is refused: 401 INVALID_SIGNATURE, nothing run", async () => {
    const { target, id } = await listener("curl, tampered");
    const tampered = curlCommand(target).replace(`--data-binary "$BODY"`, `--data-binary "\${BODY/card.lost/card.found}"`);
    expect(tampered).not.toBe(curlCommand(target));
    const r = await bash(tampered);
    expect(errorInfo(JSON.parse(r.stdout)).reason, r.out).toBe("INVALID_SIGNATURE");
    expect(await executionsOf(ts.admin, id)).toEqual([]);
  }, 120_000);

  it("the sender script's command is accepted and runs the automation on the example body", async () => {
    const { target, id } = await listener("sender script");
    const r = await bash(senderCommand(target));
    expect(r.code, r.out).toBe(0);
    expect((await executionsOf(ts.admin, id)).map((e) => e.context)).toEqual([{ trigger: JSON.parse(target.body), webhook: { eventId: expect.any(String), eventType: null } }]);
  }, 120_000);
});
