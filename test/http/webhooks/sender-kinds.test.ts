// Listeners for senders with schemes of their own, through real HTTP, each delivery signed by the
// sender's own library (test/support/sender-deliveries.ts: `standardwebhooks`,
// `@octokit/webhooks-methods`, `stripe`'s generateTestHeaderString); Standard Webhooks' `v1a` with
// node:crypto, which its library does not sign. For each kind: accepted once per event id with what steps see, and
// each refusal the contract documents, in the intake's order; the sender's own secret on rotation,
// with the overlap; the URL of another kind answered 404.
import { generateKeyPairSync, randomUUID, sign as signWith, type KeyObject } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { senderHeaders, SENDER_OPERATIONS, type SenderKind } from "../../support/sender-deliveries.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { webhookTrigger } from "../../support/triggers.js";
import { automationsApi, createHooked, evaluateStep, eventsOf, executionsOf, expectAccepted, expectRefused, postRaw, settled, type Answer, type Hooked } from "./helpers.js";

const KB64 = 65_536;
const DAY = 24 * 3600 * 1000;

/** What a test sends: the body and, for the kinds whose id is a header, the event id. */
interface Event {
  body: string;
  id: string;
}

interface Sender {
  kind: SenderKind;
  operationId: string;
  suffix: string;
  /** The headers a correctly signed delivery of `event` carries, signed with `secret` at Unix second `at`. */
  headers(secret: string, event: Event, at: number): Promise<Record<string, string>>;
  /** A new event of this sender. */
  event(body?: Record<string, unknown>): Event;
  /** The event type steps see for `event`. */
  eventType: string | null;
  signatureHeader: string;
  /** The header (or body field) without which the event has no id, and the refusal it gives. */
  withoutId(event: Event): { headers?: Record<string, string | undefined>; body?: string; reason: string; field: string };
  /** A secret the sender itself would make, to give to RotateWebhookSecret. */
  ownSecret(): string;
  generatedForm: RegExp;
}

const standardWebhooks: Sender = {
  kind: "standardWebhooks",
  operationId: SENDER_OPERATIONS.standardWebhooks,
  suffix: "/standard-webhooks",
  headers: (secret, event, at) => senderHeaders("standardWebhooks", secret, event.body, { id: event.id, timestamp: String(at) }),
  event: (data = { userId: "u-1" }) => ({ id: `msg_${randomUUID().replaceAll("-", "")}`, body: JSON.stringify({ type: "invoice.paid", timestamp: "2026-11-20T09:30:00Z", data }) }),
  eventType: "invoice.paid",
  signatureHeader: "webhook-signature",
  withoutId: () => ({ headers: { "webhook-id": undefined }, reason: "MISSING_HEADER", field: "headers.webhook-id" }),
  ownSecret: () => `whsec_${Buffer.from(randomUUID().replaceAll("-", "").slice(0, 24)).toString("base64")}`,
  generatedForm: /^whsec_[A-Za-z0-9+/]{43}=$/,
};

const github: Sender = {
  kind: "github",
  operationId: SENDER_OPERATIONS.github,
  suffix: "/github",
  headers: (secret, event, at) => senderHeaders("github", secret, event.body, { id: event.id, timestamp: String(at), event: "push" }),
  event: (data = { userId: "u-1" }) => ({ id: randomUUID(), body: JSON.stringify({ ref: "refs/heads/main", data }) }),
  eventType: "push",
  signatureHeader: "X-Hub-Signature-256",
  withoutId: () => ({ headers: { "X-GitHub-Delivery": undefined }, reason: "MISSING_HEADER", field: "headers.X-GitHub-Delivery" }),
  ownSecret: () => `typed into GitHub's form ${randomUUID()}`.replaceAll(" ", "-"),
  generatedForm: /^[A-Za-z0-9_-]{43}$/,
};

const stripeSender: Sender = {
  kind: "stripe",
  operationId: SENDER_OPERATIONS.stripe,
  suffix: "/stripe",
  headers: (secret, event, at) => senderHeaders("stripe", secret, event.body, { id: event.id, timestamp: String(at) }),
  event: (data = { userId: "u-1" }) => {
    const id = `evt_${randomUUID().replaceAll("-", "")}`;
    return { id, body: JSON.stringify({ id, object: "event", type: "invoice.paid", data: { object: data } }) };
  },
  eventType: "invoice.paid",
  signatureHeader: "Stripe-Signature",
  withoutId: (event) => {
    const { id: _id, ...rest } = JSON.parse(event.body) as Record<string, unknown>;
    return { body: JSON.stringify(rest), reason: "INVALID_EVENT_ID", field: "body.id" };
  },
  ownSecret: () => `whsec_${randomUUID().replaceAll("-", "")}`,
  generatedForm: /^whsec_[A-Za-z0-9]{32}$/,
};

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => ts?.stop());

const now = () => Math.floor(ts.clock.now() / 1000);
/** The server's base URL, from a listener's URL. */
const baseOf = (url: string) => url.slice(0, url.indexOf("/api/"));

/** A published, enabled listener of `sender`'s kind whose one step reads the body and the delivery. */
async function listenerOf(sender: Sender, kind: Record<string, unknown> = { [sender.kind]: {} }, cidrs?: string[]): Promise<Hooked> {
  return createHooked(ts, {
    kind,
    ...(cidrs ? { cidrs } : {}),
    steps: [evaluateStep("seen", { eventId: "ctx.webhook.eventId", eventType: "ctx.webhook.eventType", body: "ctx.trigger" })],
  });
}

/** Posts `event` to `url` signed with `secret` (overrides applied after signing). */
async function deliver(sender: Sender, url: string, secret: string, event: Event, options: { at?: number; headers?: Record<string, string | undefined>; body?: string } = {}): Promise<Answer> {
  const headers = { ...(await sender.headers(secret, event, options.at ?? now())), ...options.headers };
  return postRaw(url, { headers, body: options.body ?? event.body, operationId: sender.operationId });
}

describe.each([standardWebhooks, github, stripeSender])("a $kind listener", (sender) => {
  let hook: Hooked;
  beforeAll(async () => {
    hook = await listenerOf(sender);
  });

  it("is reached at its kind's URL and gets a secret in its sender's form, shown once", () => {
    expect(new URL(hook.url).pathname).toBe(`/api/v1/webhooks/incoming/${hook.listenerId}${sender.suffix}`);
    expect(hook.secret).toMatch(sender.generatedForm);
    const trigger = webhookTrigger(hook.automation)!;
    expect(Object.fromEntries(["hmac", "jwt", "standardWebhooks", "github", "stripe"].map((k) => [k, (trigger as Record<string, unknown>)[k] === null]))).toEqual({
      hmac: true,
      jwt: true,
      standardWebhooks: sender.kind !== "standardWebhooks",
      github: sender.kind !== "github",
      stripe: sender.kind !== "stripe",
    });
  });

  it("accepts a delivery its sender's library signed, once per event id; the steps see the body and the delivery", async () => {
    const event = sender.event({ userId: "u-42" });
    const accepted = expectAccepted(await deliver(sender, hook.url, hook.secret, event));
    expect(accepted).toMatchObject({ eventId: event.id, eventType: sender.eventType, outcome: "WEBHOOK_EVENT_OUTCOME_EXECUTED" });
    const execution = await settled(ts, accepted.automationExecutionId!);
    expect(execution.context).toEqual({ trigger: JSON.parse(event.body), webhook: { eventId: event.id, eventType: sender.eventType } });
    expect(execution.stepResults[0]?.output).toEqual({ eventId: event.id, eventType: sender.eventType, body: JSON.parse(event.body) });

    // The sender's retry of the same event (signed again, later) is not run again.
    expectRefused(await deliver(sender, hook.url, hook.secret, event, { at: now() + 60 }), 409, "DUPLICATE_EVENT");
    expect((await executionsOf(ts.admin, hook.id)).filter((e) => e.eventId === event.id)).toHaveLength(1);
    expect((await eventsOf(ts.admin, hook.id)).find((e) => e.eventId === event.id)?.eventType).toBe(sender.eventType);
  });

  it("refuses a wrong signature (401 INVALID_SIGNATURE) and a missing one (401 MISSING_SIGNATURE), consuming no event id", async () => {
    const event = sender.event();
    expectRefused(await deliver(sender, hook.url, sender.ownSecret(), event), 401, "INVALID_SIGNATURE");
    expectRefused(await deliver(sender, hook.url, hook.secret, event, { body: event.body.replace("u-1", "u-2") }), 401, "INVALID_SIGNATURE");
    expectRefused(await deliver(sender, hook.url, hook.secret, event, { headers: { [sender.signatureHeader]: undefined } }), 401, "MISSING_SIGNATURE");
    expectAccepted(await deliver(sender, hook.url, hook.secret, event));
  });

  it("refuses a delivery without its event id: 400 naming it", async () => {
    const event = sender.event();
    const without = sender.withoutId(event);
    const answer = await deliver(sender, hook.url, hook.secret, { ...event, ...(without.body ? { body: without.body } : {}) }, { headers: without.headers ?? {} });
    expectRefused(answer, 400, without.reason);
    expect(answer.body.message).toMatch(new RegExp(`^${without.field.replace(".", "\\.")}: `));
  });

  it("refuses a body over 64 KB (413) and one that is not JSON (400), before authentication", async () => {
    const event = sender.event({ pad: "x".repeat(KB64) });
    expectRefused(await deliver(sender, hook.url, hook.secret, event), 413, "PAYLOAD_TOO_LARGE");
    const notJson = { ...sender.event(), body: "{not json" };
    const answer = await deliver(sender, hook.url, sender.ownSecret(), notJson);
    // Stripe's event id is in the body: a body that is not JSON has none, and says so first.
    expectRefused(answer, 400, "MALFORMED_BODY");
  });

  it("answers 404 at another kind's URL, and a delivery for another listener kind is not verified", async () => {
    const event = sender.event();
    for (const suffix of ["", "/standard-webhooks", "/github", "/stripe"].filter((s) => s !== sender.suffix)) {
      const url = `${baseOf(hook.url)}/api/v1/webhooks/incoming/${hook.listenerId}${suffix}`;
      const operationId = { "": "svc.api.webhooks.v1.IncomingWebhookService.Receive", "/standard-webhooks": standardWebhooks.operationId, "/github": github.operationId, "/stripe": stripeSender.operationId }[suffix]!;
      const answer = await postRaw(url, { headers: await sender.headers(hook.secret, event, now()), body: event.body, operationId });
      expectRefused(answer, 404, "LISTENER_NOT_FOUND");
    }
    expectAccepted(await deliver(sender, hook.url, hook.secret, event));
  });

  it("refuses a query string (400), which no signature covers, before the listener is looked up", async () => {
    const event = sender.event();
    const answer = await deliver(sender, `${hook.url}?source=billing`, hook.secret, event);
    expectRefused(answer, 400, "INVALID_ARGUMENT");
    expect(answer.body.message).toBe("query: must be absent: the webhook intake takes no query parameters");
    expectRefused(await deliver(sender, `${baseOf(hook.url)}/api/v1/webhooks/incoming/wh_unknown0000000${sender.suffix}?a=1`, hook.secret, event), 400, "INVALID_ARGUMENT");
    expectAccepted(await deliver(sender, `${hook.url}?`, hook.secret, event));
  });

  it("checks the source address first: 403 before headers, body or signature", async () => {
    const fenced = await listenerOf(sender, undefined, ["203.0.113.0/24"]);
    const event = sender.event();
    expectRefused(await deliver(sender, fenced.url, "wrong", { ...event, body: "{not json" }, { headers: { "Content-Type": undefined } }), 403, "SOURCE_NOT_ALLOWED");
  });

  it("takes the sender's own secret on rotation; the replaced one stays valid for the grace period only", async () => {
    const rotating = await listenerOf(sender);
    const own = sender.ownSecret();
    const rotated = unwrap(await automationsApi(ts.admin).rotate(rotating.id, { webhookSecret: own }));
    expect(rotated.webhookSecret).toBe(own);
    expectAccepted(await deliver(sender, rotating.url, own, sender.event()));
    expectAccepted(await deliver(sender, rotating.url, rotating.secret, sender.event()));
    // Generated when none is given, in the kind's form.
    const generated = unwrap(await automationsApi(ts.admin).rotate(rotating.id)).webhookSecret;
    expect(generated).toMatch(sender.generatedForm);
    expectAccepted(await deliver(sender, rotating.url, generated, sender.event()));
    expectAccepted(await deliver(sender, rotating.url, own, sender.event()));
    // The secret before `own` ended with the second rotation; `own` ends with its grace period.
    expectRefused(await deliver(sender, rotating.url, rotating.secret, sender.event()), 401, "INVALID_SIGNATURE");
    ts.clock.advance(DAY + 1000);
    const event = sender.event();
    expectRefused(await deliver(sender, rotating.url, own, event), 401, "INVALID_SIGNATURE");
    expectAccepted(await deliver(sender, rotating.url, generated, event));
  });

  it("refuses a given secret of another form: 400, nothing changed, the secret not repeated", async () => {
    const answer = await automationsApi(ts.admin).rotate(hook.id, { webhookSecret: "short" });
    expect(answer.response.status).toBe(400);
    expect(JSON.stringify(answer.error)).not.toContain('"short"');
    expectAccepted(await deliver(sender, hook.url, hook.secret, sender.event()));
  });
});

describe("timestamps", () => {
  it.each([standardWebhooks, stripeSender])("$kind: a delivery signed more than 300 s away is 400 TIMESTAMP_OUT_OF_WINDOW; 300 s is accepted", async (sender) => {
    const hook = await listenerOf(sender);
    for (const skew of [-301, 301]) expectRefused(await deliver(sender, hook.url, hook.secret, sender.event(), { at: now() + skew }), 400, "TIMESTAMP_OUT_OF_WINDOW");
    for (const skew of [-300, 300]) expectAccepted(await deliver(sender, hook.url, hook.secret, sender.event(), { at: now() + skew }));
  });

  it("github: no timestamp is signed, so a replay of a recorded delivery days later is refused by its delivery id (409) within the 7 days", async () => {
    const hook = await listenerOf(github);
    const event = github.event();
    const headers = await github.headers(hook.secret, event, now());
    expectAccepted(await postRaw(hook.url, { headers, body: event.body, operationId: github.operationId }));
    ts.clock.advance(6 * DAY);
    expectRefused(await postRaw(hook.url, { headers, body: event.body, operationId: github.operationId }), 409, "DUPLICATE_EVENT");
  });

  it("stripe: event ids compare exactly, as Stripe's are case-sensitive: evt_X and evt_x are two events", async () => {
    const hook = await listenerOf(stripeSender);
    const upper = `evt_${randomUUID().replaceAll("-", "").toUpperCase()}`;
    for (const id of [upper, upper.toLowerCase()]) {
      expectAccepted(await deliver(stripeSender, hook.url, hook.secret, { id, body: JSON.stringify({ id, type: "invoice.paid" }) }));
    }
    expect((await eventsOf(ts.admin, hook.id)).map((e) => e.eventId).sort()).toEqual([upper, upper.toLowerCase()].sort());
  });

  it("stripe: a Stripe-Signature without t= is 400 INVALID_TIMESTAMP, before the body and the signature", async () => {
    const hook = await listenerOf(stripeSender);
    const answer = await deliver(stripeSender, hook.url, hook.secret, { ...stripeSender.event(), body: "{not json" }, { headers: { "Stripe-Signature": "v1=00" } });
    expectRefused(answer, 400, "INVALID_TIMESTAMP");
  });
});

describe("Standard Webhooks specifics", () => {
  it("accepts a header with several signatures when any one matches, as during the sender's rotation", async () => {
    const hook = await listenerOf(standardWebhooks);
    const event = standardWebhooks.event();
    const at = now();
    const other = new Webhook(standardWebhooks.ownSecret()).sign(event.id, new Date(at * 1000), event.body);
    const ours = new Webhook(hook.secret).sign(event.id, new Date(at * 1000), event.body);
    expectAccepted(await deliver(standardWebhooks, hook.url, hook.secret, event, { at, headers: { "webhook-signature": `${other} ${ours}` } }));
    const tooMany = Array.from({ length: 16 }, () => other).join(" ");
    expectRefused(await deliver(standardWebhooks, hook.url, hook.secret, standardWebhooks.event(), { headers: { "webhook-signature": `${tooMany} ${ours}` } }), 401, "INVALID_SIGNATURE");
  });

  describe("with a public key (v1a, Ed25519)", () => {
    let keys: { publicKey: KeyObject; privateKey: KeyObject };
    let hook: Hooked;
    const whpk = (key: KeyObject) => `whpk_${key.export({ format: "der", type: "spki" }).subarray(12).toString("base64")}`;
    const v1a = (id: string, at: number, body: string, key = keys.privateKey) => `v1a,${signWith(null, Buffer.from(`${id}.${at}.${body}`), key).toString("base64")}`;
    /** A delivery signed `v1a` (the library signs only v1), or with `signature` as given. */
    const sendSigned = (event: Event, signature?: string) => {
      const at = now();
      const headers = { "Content-Type": "application/json", "webhook-id": event.id, "webhook-timestamp": String(at), "webhook-signature": signature ?? v1a(event.id, at, event.body) };
      return postRaw(hook.url, { headers, body: event.body, operationId: standardWebhooks.operationId });
    };

    beforeAll(async () => {
      keys = generateKeyPairSync("ed25519");
      hook = await listenerOf(standardWebhooks, { standardWebhooks: { publicKey: whpk(keys.publicKey) } });
    });

    it("has no secret, shows its key, and accepts v1a signatures made with the matching private key", async () => {
      expect(hook.secret).toBe("");
      expect(webhookTrigger(hook.automation)?.standardWebhooks).toEqual({ publicKey: whpk(keys.publicKey) });
      const accepted = expectAccepted(await sendSigned(standardWebhooks.event()));
      expect(accepted.eventType).toBe("invoice.paid");
    });

    it("refuses a v1a signature of another key, and a v1 (HMAC) signature", async () => {
      const event = standardWebhooks.event();
      const stranger = generateKeyPairSync("ed25519").privateKey;
      expectRefused(await sendSigned(event, v1a(event.id, now(), event.body, stranger)), 401, "INVALID_SIGNATURE");
      expectRefused(await deliver(standardWebhooks, hook.url, standardWebhooks.ownSecret(), event), 401, "INVALID_SIGNATURE");
      expectAccepted(await sendSigned(event));
    });

    it("has no secret to rotate (400 NOT_HMAC_TRIGGER), and a key not in the whpk_ form is refused when saved", async () => {
      const answer = await automationsApi(ts.admin).rotate(hook.id);
      expect(answer.response.status).toBe(400);
      expect(JSON.stringify(answer.error)).toContain("NOT_HMAC_TRIGGER");
      const bad = await automationsApi(ts.admin).create({ displayName: "bad key", triggers: [{ webhook: { standardWebhooks: { publicKey: `whpk_${Buffer.alloc(31).toString("base64")}` } } }], automationSteps: [] });
      expect(bad.response.status).toBe(400);
    });
  });
});

describe("changing a listener's kind", () => {
  it("keeps the listener id, moves its URL, and gives a new secret in the new kind's form, ending the old one", async () => {
    const hook = await createHooked(ts, {});
    const api = automationsApi(ts.admin);
    const automation = { ...hook.automation, triggers: [{ webhook: { stripe: {} } }] };
    const saved = unwrap(await api.update(hook.id, automation, "triggers"));
    const trigger = webhookTrigger(saved.automation)!;
    expect(trigger.listenerId).toBe(hook.listenerId);
    expect(trigger.url).toBe(`${hook.url}/stripe`);
    expect(saved.webhookSecret).toMatch(stripeSender.generatedForm);
    expectRefused(await postRaw(hook.url, { headers: { "Content-Type": "application/json" }, body: "{}" }), 404, "LISTENER_NOT_FOUND");
    expectAccepted(await deliver(stripeSender, trigger.url!, saved.webhookSecret!, stripeSender.event()));
    // A save that keeps the kind keeps the secret.
    const again = unwrap(await api.update(hook.id, { ...saved.automation, displayName: "renamed" }, "displayName,triggers"));
    expect(again.webhookSecret).toBeNull();
    expectAccepted(await deliver(stripeSender, trigger.url!, saved.webhookSecret!, stripeSender.event()));
  });

  it("an hmac listener takes no given secret: 400, the service generates it", async () => {
    const hook = await createHooked(ts, {});
    const answer = await automationsApi(ts.admin).rotate(hook.id, { webhookSecret: "whsec_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345" });
    expect(answer.response.status).toBe(400);
    expect(JSON.stringify(answer.error)).toContain("generated by the service");
  });
});
