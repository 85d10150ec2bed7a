// The sender's command (scripts/send-webhook.ts) as a partner runs it: signs, sends, prints what it
// sent and the answer, and exits 0 on a 2xx (1 otherwise).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { runSendWebhook } from "../../support/process.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { webhookTrigger } from "../../support/triggers.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
  ts.clock.set(Date.now());
});
afterAll(async () => ts?.stop());

const run = runSendWebhook;

describe("scripts/send-webhook.ts", () => {
  it("sends an HMAC-signed event that the intake accepts, then the same id again (409, exit 1)", async () => {
    const { automation, webhookSecret } = unwrap(
      await ts.admin.POST("/api/v1/automations", { body: { automation: { displayName: "script", isDraft: false, enabled: true, triggers: [{ webhook: { hmac: {} } }] } } }),
    );
    const url = webhookTrigger(automation)!.url!;
    const eventId = "0b7c5a1e-3f2d-4c6b-9a8e-1d2f3a4b5c6d";
    const first = await run(["--url", url, `--secret=${webhookSecret!}`, "--body", '{"event":"card.lost"}', "--event-id", eventId]);
    expect(first.out).toContain(`POST ${url}`);
    expect(first.out).toContain("Webhook-Signature:");
    expect(first.out).toContain("=> 200");
    expect(first.out).not.toContain(webhookSecret!);
    expect(first.code).toBe(0);
    const again = await run(["--url", url, `--secret=${webhookSecret!}`, "--body", '{"event":"card.lost"}', "--event-id", eventId]);
    expect(again.out).toContain("=> 409");
    expect(again.code).toBe(1);
  }, 60_000);

  it("takes a secret that begins with a dash as the secret, as docs/senders.md passes it", async () => {
    const { automation } = unwrap(await ts.admin.POST("/api/v1/automations", { body: { automation: { displayName: "dash", isDraft: false, enabled: true, triggers: [{ webhook: { hmac: {} } }] } } }));
    const r = await run(["--url", webhookTrigger(automation)!.url!, "--secret=-not-the-secret", "--body", "{}"]);
    expect(r.out).toContain("=> 401");
    expect(r.out).toContain("INVALID_SIGNATURE");
    expect(r.code).toBe(1);
  }, 60_000);

  it("refuses to run without a way to authenticate (exit 2)", async () => {
    const r = await run(["--url", `${ts.url}/api/v1/webhooks/incoming/wh_x`, "--body", "{}"]);
    expect(r.code).toBe(2);
    expect(r.out).toContain("--secret");
  }, 60_000);

  it("prints its usage for --help (exit 0), naming every option", async () => {
    const r = await run(["--help"]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Usage: npx tsx scripts\/send-webhook.ts/);
    for (const option of ["--url", "--body", "--body-file", "--secret=", "--jwk-file", "--pem-file", "--kid", "--alg", "--base-url", "--event-id", "--timestamp"]) expect(r.out).toContain(option);
  }, 60_000);

  it("refuses an unknown option or a missing value with one line, no stack trace (exit 2)", async () => {
    for (const args of [["--url", "http://127.0.0.1:1/x", "--bogus"], ["--url"]]) {
      const r = await run(args);
      expect(r.code).toBe(2);
      expect(r.out.trim().split("\n")).toHaveLength(1);
      expect(r.out).toMatch(/^send-webhook: .*(--bogus|--url).*--help/);
      expect(r.out).not.toMatch(/\bat \S+ \(|node:internal/);
    }
  }, 60_000);
});
