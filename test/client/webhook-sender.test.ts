// The sender's functions (src/client/webhook-sender.ts) sign each sender kind exactly as that
// sender's own library does (standardwebhooks, @octokit/webhooks-methods, stripe): the same headers,
// byte for byte, for the same event id, time and body. Standard Webhooks' v1a is checked with the
// public key, as the intake checks it. That the server accepts them: test/http/webhooks/send-webhook-script.test.ts.
import { generateKeyPairSync, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sendWebhookEvent, type WebhookAuth } from "../../src/client/webhook-sender.js";
import { senderHeaders } from "../support/sender-deliveries.js";

const BODY = '{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","type":"invoice.paid","data":{"amount":"12.50 €"}}';
const TIMESTAMP = "1764417600";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/** The headers sendWebhookEvent sends with `auth`, captured by a fetch that answers 200 `{}`. */
async function sentHeaders(auth: WebhookAuth, eventId?: string): Promise<Record<string, string>> {
  let headers: Record<string, string> = {};
  const fetch = (async (_url: string, init: RequestInit) => {
    headers = init.headers as Record<string, string>;
    return new Response("{}", { status: 200 });
  }) as typeof globalThis.fetch;
  await sendWebhookEvent({ url: "http://127.0.0.1:1/hook", body: BODY, auth, timestamp: TIMESTAMP, fetch, ...(eventId ? { eventId } : {}) });
  return headers;
}

describe("sendWebhookEvent, for the senders' own schemes", () => {
  it("signs a Standard Webhooks v1 event as the standardwebhooks library does", async () => {
    const id = "msg_2b7f3c1a9e8d4c6b5a0f1e2d";
    expect(await sentHeaders({ standardWebhooks: { secret: SECRET } }, id)).toEqual(await senderHeaders("standardWebhooks", SECRET, BODY, { id, timestamp: TIMESTAMP }));
  });

  it("gives a Standard Webhooks event a new msg_ id unless one is given", async () => {
    const [a, b] = [await sentHeaders({ standardWebhooks: { secret: SECRET } }), await sentHeaders({ standardWebhooks: { secret: SECRET } })];
    expect(a["webhook-id"]).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(b["webhook-id"]).not.toBe(a["webhook-id"]);
  });

  it("signs a Standard Webhooks v1a event with the Ed25519 key, verified by its public key", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const id = "msg_5f1c0e3a9b7d42e68c1a0f3b";
    for (const key of [privateKey, privateKey.export({ type: "pkcs8", format: "pem" }).toString()]) {
      const headers = await sentHeaders({ standardWebhooks: { privateKey: key } }, id);
      expect(headers).toMatchObject({ "webhook-id": id, "webhook-timestamp": TIMESTAMP });
      const [version, signature] = headers["webhook-signature"]!.split(",");
      expect(version).toBe("v1a");
      expect(verify(null, Buffer.from(`${id}.${TIMESTAMP}.${BODY}`), publicKey, Buffer.from(signature!, "base64"))).toBe(true);
    }
  });

  it("refuses a Standard Webhooks key that is not Ed25519, and a secret without whsec_", async () => {
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    await expect(sentHeaders({ standardWebhooks: { privateKey } })).rejects.toThrow("Ed25519");
    await expect(sentHeaders({ standardWebhooks: { secret: SECRET.slice("whsec_".length) } })).rejects.toThrow("whsec_");
  });

  it("signs a GitHub delivery as @octokit/webhooks-methods does, with its event and no timestamp", async () => {
    const id = "9f3c2a7e-1b0d-4c6a-8e5f-7a1b2c3d4e5f";
    const headers = await sentHeaders({ github: { secret: "a secret typed in GitHub's form", event: "push" } }, id);
    expect(headers).toEqual(await senderHeaders("github", "a secret typed in GitHub's form", BODY, { id, timestamp: TIMESTAMP, event: "push" }));
  });

  it("signs a Stripe event as stripe's test header does, its id the body's", async () => {
    expect(await sentHeaders({ stripe: { secret: SECRET } })).toEqual(await senderHeaders("stripe", SECRET, BODY, { id: "evt_1NG8Du2eZvKYlo2CUI79vXWy", timestamp: TIMESTAMP }));
    await expect(sentHeaders({ stripe: { secret: SECRET } }, "evt_other")).rejects.toThrow("body's id");
  });
});
