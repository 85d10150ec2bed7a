// Notify steps signed with Ed25519 (`v1a,`, Standard Webhooks' asymmetric signature) through HTTP, on
// a server with the development flag posting over plain http to a receiver on 127.0.0.1: each
// signature is checked with implementations that are not ours (node:crypto's verify from the raw
// public key, Python's `cryptography` when it is installed, openssl's pkeyutl) and with the typed
// client's verifyNotification; the public key endpoint (whpk_ and JWK, 404 for an unknown automation
// and for one without a key pair, 403 for other roles); HMAC kept for steps that do not ask; and
// that the private key reaches no answer or log.
import { execFileSync, spawnSync } from "node:child_process";
import { createPublicKey, verify } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { unwrap, verifyNotification } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage } from "../../../src/storage/connect.js";
import { NotificationVerificationError } from "../../../src/client/notification-errors.js";
import { webhookErrors } from "../../support/contract.js";
import { logCapture, startTestServer, type TestServer } from "../../support/server.js";
import { expectError } from "../limits/helpers.js";
import { automationsApi, createHooked, expectAccepted, sendHmac, settled, type Step } from "../webhooks/helpers.js";

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

let ts: TestServer;
let logs: ReturnType<typeof logCapture>;
let receiver: http.Server;
let port = 0;
const received: Received[] = [];
const drift: string[] = [];

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ headers: req.headers, body });
      drift.push(...webhookErrors("notification", req.headers, body));
      res.writeHead(204).end();
    });
  });
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  port = (receiver.address() as { port: number }).port;
  logs = logCapture();
  ts = await startTestServer({ NOTIFICATION_ALLOW_INSECURE: "1", LOG_LEVEL: "debug" }, logs.stream);
});

afterEach(() => {
  expect(drift.splice(0), "notifications sent as the contract's webhooks declare").toEqual([]);
});

afterAll(async () => {
  await ts?.stop();
  await new Promise((r) => receiver?.close(r));
});

const ED25519 = "NOTIFY_SIGNATURE_SCHEME_ED25519";
const step = (signatureScheme?: string): Step =>
  ({ stepName: "tell", notify: { url: `http://127.0.0.1:${port}/hook`, bodyCel: '{"type": "card.lost", "userId": ctx.trigger.userId}', ...(signatureScheme ? { signatureScheme } : {}) } }) as Step;

const publicKeyOf = (id: string) => ts.admin.GET("/api/v1/automations/{id}/notification-public-key", { params: { path: { id } } });

/** An automation whose one step notifies with `scheme`, and the notification one event makes it send. */
async function notified(scheme?: string) {
  const hook = await createHooked(ts);
  const saved = unwrap(await automationsApi(ts.admin).update(hook.id, { displayName: "x", automationSteps: [step(scheme)] }, "automationSteps"));
  const before = received.length;
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, '{"userId":"u-1"}'));
  const execution = await settled(ts, event.automationExecutionId!);
  expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
  expect(received).toHaveLength(before + 1);
  return { hook, saved, notification: received[received.length - 1]! };
}

/** The notify part of a step as answered. */
const notifyOf = (s: Step | undefined) => (s && "notify" in s ? s.notify : undefined);
const header = (n: Received, name: string) => String(n.headers[name]);
const signedText = (n: Received) => `${header(n, "webhook-id")}.${header(n, "webhook-timestamp")}.${n.body}`;

/** Standard Webhooks' `v1a` from its definition, with node:crypto alone: the raw key made a KeyObject by its JWK, the signature checked by OpenSSL's Ed25519. */
function nodeVerifies(publicKey: string, n: Received): boolean[] {
  const x = Buffer.from(publicKey.slice("whpk_".length), "base64").toString("base64url");
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
  return header(n, "webhook-signature")
    .split(" ")
    .filter((e) => e.startsWith("v1a,"))
    .map((e) => verify(null, Buffer.from(signedText(n), "utf8"), key, Buffer.from(e.slice(4), "base64")));
}

const hasPythonCryptography = spawnSync("python3", ["-c", "import cryptography"]).status === 0;
const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;

describe("notify steps signed with Ed25519", () => {
  it("sends one v1a, signature that the published key verifies, by node:crypto, the typed client and (when present) Python and openssl", async () => {
    const { hook, saved, notification } = await notified(ED25519);
    expect(notifyOf(saved.automation.automationSteps?.[0])).toMatchObject({ signatureScheme: ED25519 });
    // No HMAC step: no notification secret is made or shown.
    expect(saved.notificationSecret).toBeNull();
    const got = unwrap(await automationsApi(ts.admin).get(hook.id)).automation;
    expect(notifyOf(got.automationSteps?.[0])?.signatureScheme).toBe(ED25519);

    const key = unwrap(await publicKeyOf(hook.id));
    expect(key.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(key.jwk).toEqual({ kty: "OKP", crv: "Ed25519", x: Buffer.from(key.publicKey.slice(5), "base64").toString("base64url") });
    expect(Date.parse(key.createdAt)).not.toBeNaN();

    const signature = header(notification, "webhook-signature");
    expect(signature).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(nodeVerifies(key.publicKey, notification)).toEqual([true]);
    expect(nodeVerifies(key.publicKey, { ...notification, body: notification.body.replace("u-1", "u-2") })).toEqual([false]);

    const body = await verifyNotification<{ type: string; userId: string }>({ publicKeys: [key.publicKey], headers: notification.headers, body: notification.body, now: ts.clock.now() });
    expect(body).toEqual({ type: "card.lost", userId: "u-1" });

    const dir = mkdtempSync(join(tmpdir(), "v1a-"));
    try {
      writeFileSync(join(dir, "signed"), signedText(notification));
      writeFileSync(join(dir, "sig"), Buffer.from(signature.slice(4), "base64"));
      if (hasPythonCryptography) {
        const program = [
          "import base64, sys",
          "from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey",
          "key = Ed25519PublicKey.from_public_bytes(base64.b64decode(sys.argv[1][len('whpk_'):]))",
          "key.verify(open(sys.argv[3], 'rb').read(), open(sys.argv[2], 'rb').read())",
          "print('verified')",
        ].join("\n");
        expect(execFileSync("python3", ["-c", program, key.publicKey, join(dir, "signed"), join(dir, "sig")], { encoding: "utf8" }).trim()).toBe("verified");
      }
      if (hasOpenssl) {
        // SubjectPublicKeyInfo of an Ed25519 key: a fixed 12-byte prefix and the raw 32 bytes (RFC 8410).
        const spki = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), Buffer.from(key.publicKey.slice(5), "base64")]);
        writeFileSync(join(dir, "key.pem"), `-----BEGIN PUBLIC KEY-----\n${spki.toString("base64")}\n-----END PUBLIC KEY-----\n`);
        const run = spawnSync("openssl", ["pkeyutl", "-verify", "-pubin", "-inkey", join(dir, "key.pem"), "-rawin", "-in", join(dir, "signed"), "-sigfile", join(dir, "sig")], { encoding: "utf8" });
        expect(run.stdout).toContain("Signature Verified Successfully");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the client refuses a v1a, signature by another key, and an HMAC secret does not verify it", async () => {
    const { notification } = await notified(ED25519);
    const other = await notified(ED25519);
    const otherKey = unwrap(await publicKeyOf(other.hook.id)).publicKey;
    const refusal = await verifyNotification({ publicKeys: [otherKey], headers: notification.headers, body: notification.body, now: ts.clock.now() }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(NotificationVerificationError);
    expect(refusal).toMatchObject({ reason: "NO_MATCHING_SIGNATURE" });
    const bySecret = await verifyNotification({ secrets: ["whsec_" + Buffer.alloc(32, 7).toString("base64")], headers: notification.headers, body: notification.body, now: ts.clock.now() }).catch((e: unknown) => e);
    expect(bySecret).toMatchObject({ reason: "NO_MATCHING_SIGNATURE" });
    // Each automation has its own key pair.
    expect(otherKey).not.toBe(unwrap(await publicKeyOf((await notified(ED25519)).hook.id)).publicKey);
  });

  it("keeps the key pair across saves, and the HMAC steps of the same automation sign v1,", async () => {
    const { hook } = await notified(ED25519);
    const first = unwrap(await publicKeyOf(hook.id)).publicKey;
    const api = automationsApi(ts.admin);
    // Back to HMAC: its first secret is made now, and shown once; the key pair stays.
    const saved = unwrap(await api.update(hook.id, { displayName: "x", automationSteps: [step("NOTIFY_SIGNATURE_SCHEME_HMAC_SHA256")] }, "automationSteps"));
    expect(saved.notificationSecret).toMatch(/^whsec_/);
    expect(notifyOf(saved.automation.automationSteps?.[0])?.signatureScheme).toBe("NOTIFY_SIGNATURE_SCHEME_HMAC_SHA256");
    const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, '{"userId":"u-3"}'));
    expect((await settled(ts, event.automationExecutionId!)).state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    const n = received[received.length - 1]!;
    expect(header(n, "webhook-signature")).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    await expect(verifyNotification({ secrets: [saved.notificationSecret!], headers: n.headers, body: n.body, now: ts.clock.now() })).resolves.toEqual({ type: "card.lost", userId: "u-3" });
    unwrap(await api.update(hook.id, { displayName: "x", automationSteps: [step(ED25519)] }, "automationSteps"));
    expect(unwrap(await publicKeyOf(hook.id)).publicKey).toBe(first);
  });

  it("a step without signatureScheme signs with HMAC and shows none; such an automation has no public key (404)", async () => {
    const { hook, saved, notification } = await notified();
    expect(notifyOf(saved.automation.automationSteps?.[0])).not.toHaveProperty("signatureScheme");
    expect(header(notification, "webhook-signature")).toMatch(/^v1,/);
    expectError(await publicKeyOf(hook.id), 404, "NOTIFICATION_PUBLIC_KEY_NOT_FOUND");
  });

  it("GetNotificationPublicKey: 404 for an unknown or deleted automation, 403 for other roles", async () => {
    expectError(await publicKeyOf("aut_doesNotExist0001"), 404, "AUTOMATION_NOT_FOUND");
    const { hook } = await notified(ED25519);
    const user = await ts.userClient(["ROLE_USER"]);
    expectError(await ts.client(user).GET("/api/v1/automations/{id}/notification-public-key", { params: { path: { id: hook.id } } }), 403);
    unwrap(await automationsApi(ts.admin).delete(hook.id));
    expectError(await publicKeyOf(hook.id), 404, "AUTOMATION_NOT_FOUND");
  });

  it("refuses NOTIFY_SIGNATURE_SCHEME_UNSPECIFIED and unknown schemes at save (400)", async () => {
    const hook = await createHooked(ts);
    const api = automationsApi(ts.admin);
    expectError(await api.update(hook.id, { displayName: "x", automationSteps: [step("NOTIFY_SIGNATURE_SCHEME_UNSPECIFIED")] }, "automationSteps"), 400);
    expectError(await api.update(hook.id, { displayName: "x", automationSteps: [step("NOTIFY_SIGNATURE_SCHEME_RSA")] }, "automationSteps"), 400);
    expectError(await publicKeyOf(hook.id), 404, "NOTIFICATION_PUBLIC_KEY_NOT_FOUND");
  });

  it("the private key reaches no answer nor log line", async () => {
    const { hook } = await notified(ED25519);
    const storage = await openStorage(loadConfig({ DATABASE_URL: ts.databaseUrl }).database);
    const row = await storage.db.selectFrom("notification_signing_keys").select(["sealed", "public_key"]).where("automation_id", "=", hook.id).executeTakeFirstOrThrow().finally(() => storage.close());
    expect(row.sealed).not.toMatch(/^MC4CAQAwBQYDK2Vw/); // sealed, not PKCS#8 in base64
    const text = logs.text();
    expect(text).not.toContain(row.sealed);
    expect(text).not.toMatch(/MC4CAQAwBQYDK2Vw/);
  });
});
