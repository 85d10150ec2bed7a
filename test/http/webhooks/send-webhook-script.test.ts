// The sender's command (scripts/send-webhook.ts) as a partner runs it: signs, sends, prints what it
// sent and the answer, and exits 0 on a 2xx (1 otherwise).
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { runSendWebhook } from "../../support/process.js";
import { senderListener } from "../../support/sender-deliveries.js";
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

  it("signs for a Standard Webhooks listener (v1, its kind read from the URL): accepted, then the same message id 409", async () => {
    const hook = await senderListener(ts, "standardWebhooks");
    const args = ["--url", hook.url, `--secret=${hook.secret}`, "--body", '{"type":"invoice.paid"}', "--event-id", "msg_2b7f3c1a9e8d4c6b5a0f1e2d"];
    const first = await run(args);
    expect(first.out).toMatch(/webhook-signature: v1,/);
    expect(first.out).toContain("=> 200");
    expect(first.out).not.toContain(hook.secret);
    expect(first.code).toBe(0);
    const again = await run(args);
    expect(again.out).toContain("=> 409");
    expect(again.code).toBe(1);
  }, 60_000);

  it("signs v1a with an Ed25519 key file for a listener holding its whpk_ public key", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const dir = mkdtempSync(join(tmpdir(), "send-webhook-"));
    onTestFinished(() => rmSync(dir, { recursive: true }));
    const keyFile = join(dir, "sender-ed25519.pem");
    writeFileSync(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }));
    const whpk = `whpk_${publicKey.export({ type: "spki", format: "der" }).subarray(-32).toString("base64")}`;
    const { automation } = unwrap(
      await ts.admin.POST("/api/v1/automations", { body: { automation: { displayName: "v1a", isDraft: false, enabled: true, triggers: [{ webhook: { standardWebhooks: { publicKey: whpk } } }] } } }),
    );
    const r = await run(["--url", webhookTrigger(automation)!.url!, "--pem-file", keyFile, "--body", '{"type":"invoice.paid"}']);
    expect(r.out).toMatch(/webhook-signature: v1a,/);
    expect(r.out).toContain("=> 200");
    expect(r.code).toBe(0);
  }, 60_000);

  it("signs for a GitHub listener with its event: accepted, then the same delivery 409", async () => {
    const hook = await senderListener(ts, "github");
    const args = ["--url", hook.url, `--secret=${hook.secret}`, "--event-type", "push", "--body", '{"ref":"refs/heads/main"}', "--event-id", randomUUID()];
    const first = await run(args);
    expect(first.out).toContain("X-GitHub-Event: push");
    expect(first.out).toMatch(/X-Hub-Signature-256: sha256=[0-9a-f]{64}/);
    expect(first.out).toContain('"eventType": "push"');
    expect(first.code).toBe(0);
    expect((await run(args)).out).toContain("=> 409");
  }, 60_000);

  it("signs for a Stripe listener, the event id the body's: accepted, then the same event 409", async () => {
    const hook = await senderListener(ts, "stripe");
    const args = ["--url", hook.url, `--secret=${hook.secret}`, "--body", JSON.stringify({ id: `evt_${randomUUID().replaceAll("-", "")}`, object: "event", type: "invoice.paid" })];
    const first = await run(args);
    expect(first.out).toMatch(/Stripe-Signature: t=\d+,v1=[0-9a-f]{64}/);
    expect(first.out).toContain("=> 200");
    expect(first.code).toBe(0);
    expect((await run(args)).out).toContain("=> 409");
  }, 60_000);

  it("refuses what a kind cannot sign with one line (exit 2): GitHub without its event, Stripe with an event id, a secret not in the sender's form, an unknown kind, a file it cannot read", async () => {
    const base = `${ts.url}/api/v1/webhooks/incoming/wh_x`;
    const cases: [string[], string][] = [
      [["--url", `${base}/github`, "--secret=s3cret-typed-in-github", "--body", "{}"], "--event-type"],
      [["--url", `${base}/stripe`, "--secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--body", "{}", "--event-id", "evt_1"], "body's id"],
      [["--url", `${base}/standard-webhooks`, "--secret=MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--body", "{}"], "whsec_"],
      [["--url", base, "--kind", "svix", "--secret=s", "--body", "{}"], "--kind must be one of hmac, jwt, standard-webhooks, github, stripe"],
      [["--url", base, "--secret=s", "--body-file", "/nonexistent/event.json"], "cannot read /nonexistent/event.json: ENOENT"],
    ];
    for (const [args, said] of cases) {
      const r = await run(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.out.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(r.out).toContain(said);
    }
  }, 60_000);

  it("says in one line that nothing answered (exit 1)", async () => {
    const closed = createServer();
    await new Promise<void>((listening) => closed.listen(0, "127.0.0.1", listening));
    const { port } = closed.address() as AddressInfo;
    await new Promise((ended) => closed.close(ended));
    const r = await run(["--url", `http://127.0.0.1:${port}/api/v1/webhooks/incoming/wh_x`, "--secret=s", "--body", "{}"]);
    expect(r.code).toBe(1);
    expect(r.out.trim().split("\n")).toHaveLength(1);
    expect(r.out).toMatch(/^send-webhook: fetch failed \(.*ECONNREFUSED/);
  }, 60_000);

  it("prints its usage for --help (exit 0), naming every option", async () => {
    const r = await run(["--help"]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Usage: npx tsx scripts\/send-webhook.ts/);
    for (const option of ["--url", "--body", "--body-file", "--secret=", "--jwk-file", "--pem-file", "--kid", "--alg", "--base-url", "--event-id", "--timestamp", "--kind", "--event-type"]) expect(r.out).toContain(option);
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
