// The listener kinds as the console reads them from answers (every arm present, the unset ones
// null): which kind, whether it has a secret to show and rotate, whose sender makes its own, and
// the words of the sender's settings.
import { describe, expect, it } from "vitest";
import type { components } from "../../generated/api.js";
import { hasSecret, kindOf, publicKeyOf, sampleDelivery, senderSetup, takesSendersSecret } from "../../console/src/listener-kinds.js";

type Webhook = components["schemas"]["IncomingWebhookTrigger"];

const NONE = { hmac: null, jwt: null, standardWebhooks: null, github: null, stripe: null, allowedSourceCidrs: [], listenerId: "wh_1", url: "http://localhost:8080/api/v1/webhooks/incoming/wh_1" };
const answer = (arm: Partial<Record<string, unknown>>): Webhook => ({ ...NONE, ...arm }) as unknown as Webhook;

const hmac = answer({ hmac: {} });
const jwt = answer({ jwt: { jwksUrl: "https://sender.example.com/jwks.json" } });
const symmetric = answer({ standardWebhooks: { publicKey: null } });
const signedWithKey = answer({ standardWebhooks: { publicKey: "whpk_gtVFaCliCkpHmooMSttu09tUx/KbUb/b73b/cHXymwg=" } });
const github = answer({ github: {} });
const stripe = answer({ stripe: {} });

describe("listener kinds", () => {
  it("reads the arm that is set, whatever the others hold", () => {
    expect([hmac, jwt, symmetric, signedWithKey, github, stripe].map(kindOf)).toEqual(["hmac", "jwt", "standardWebhooks", "standardWebhooks", "github", "stripe"]);
    expect(kindOf(NONE as unknown as Webhook)).toBeUndefined();
    expect(publicKeyOf(signedWithKey)).toBe("whpk_gtVFaCliCkpHmooMSttu09tUx/KbUb/b73b/cHXymwg=");
    expect(publicKeyOf(symmetric)).toBeNull();
  });

  it("has a secret but for JWT and a public-key Standard Webhooks listener; takes the sender's own but for HMAC", () => {
    expect([hmac, jwt, symmetric, signedWithKey, github, stripe].map(hasSecret)).toEqual([true, false, true, false, true, true]);
    expect([hmac, jwt, symmetric, signedWithKey, github, stripe].map(takesSendersSecret)).toEqual([false, false, true, false, true, true]);
  });

  it("names the settings as each sender's own form does", () => {
    expect(senderSetup(github)).toMatchObject({ urlLabel: "Payload URL", secretLabel: "Secret", settings: [{ label: "Content type", value: "application/json" }] });
    expect(senderSetup(stripe)).toMatchObject({ urlLabel: "Endpoint URL", secretLabel: "Signing secret", settings: [] });
    expect(senderSetup(stripe).note).toContain("Stripe makes its own signing secret");
    expect(senderSetup(symmetric).note).toContain("whsec_");
    expect(senderSetup(signedWithKey).note).toContain("no secret");
    expect(senderSetup(hmac)).toEqual({ urlLabel: "Webhook URL", secretLabel: "Signing secret", settings: [], note: "" });
  });
});

describe("the sample delivery the steps are checked with", () => {
  const body = { id: "evt_sample1", type: "invoice.paid", userId: "u-1" };

  it("gives each kind's event id and type as its scheme does", () => {
    expect(sampleDelivery(hmac, body)).toEqual({ eventId: "3f1c9a52-7d4e-4b8a-9c21-5e6f7a8b9c0d", eventType: null });
    expect(sampleDelivery(github, body)).toEqual({ eventId: "72d3162e-cc78-11e3-81ab-4c9367dc0958", eventType: "push" });
    expect(sampleDelivery(symmetric, body)).toEqual({ eventId: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", eventType: "invoice.paid" });
    expect(sampleDelivery(stripe, body)).toEqual({ eventId: "evt_sample1", eventType: "invoice.paid" });
  });

  it("has no event type where the body's is not one the log keeps", () => {
    expect(sampleDelivery(stripe, { type: "two words" }).eventType).toBeNull();
    expect(sampleDelivery(symmetric, [1, 2]).eventType).toBeNull();
    expect(sampleDelivery(stripe, null).eventId).toBe("evt_1NG8Du2eZvKYlo2CUI79vXWy");
  });
});
