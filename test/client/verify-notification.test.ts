// verifyNotification against the reference implementation of Standard Webhooks (the
// `standardwebhooks` package), both ways: what their signer signs, ours accepts; what the server
// signs (`signature` of src/automations/notify.ts), theirs accepts. Then what it must refuse, with
// its reason: a rotation's signatures, the tolerance's edges, a changed body, id or timestamp,
// versions it does not know, missing headers; and never a secret in a message.
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { signature } from "../../src/automations/notify.js";
import { NotificationVerificationError, verifyNotification, type NotificationVerificationReason, type VerifyNotificationOptions } from "../../src/client/index.js";

const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`;
const current = newSecret();
const replaced = newSecret();

const NOW = 1_795_167_000_000;
const seconds = (ms: number) => Math.floor(ms / 1000);
const id = "exe_9Tg3Hs6Wq1Zc4Nv8_tell";
// Several lines, characters outside ASCII: the bytes signed are the bytes sent.
const body = `{"type":"card.lost","userId":"2Qk3mN8rT1vX9yZ0",\n"note":"café ✓"}`;

/** The headers the server sends for `body` signed with `secrets` at `timestamp` (Unix seconds). */
const served = (secrets: string[], timestamp = seconds(NOW), signedBody = body, webhookId = id) => ({
  "webhook-id": webhookId,
  "webhook-timestamp": String(timestamp),
  "webhook-signature": signature(secrets, webhookId, timestamp, signedBody),
});

const verify = (options: Partial<VerifyNotificationOptions>) => verifyNotification({ secrets: [current], headers: served([current]), body, now: NOW, ...options });

async function refusal(options: Partial<VerifyNotificationOptions>): Promise<{ reason: NotificationVerificationReason; message: string }> {
  const error = await verify(options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NotificationVerificationError);
  const { reason, message } = error as NotificationVerificationError;
  for (const secret of [current, replaced]) expect(message).not.toContain(secret.slice("whsec_".length, 20));
  return { reason, message };
}

afterEach(() => vi.useRealTimers());

describe("verifyNotification and the standardwebhooks package", () => {
  it("accepts what their signer signs, and answers the body parsed", async () => {
    const signed = new Webhook(current).sign(id, new Date(NOW), body);
    const headers = { "webhook-id": id, "webhook-timestamp": String(seconds(NOW)), "webhook-signature": signed };
    expect(await verify({ headers })).toEqual(JSON.parse(body));
    expect(await verify({ headers, body: new TextEncoder().encode(body) })).toEqual(JSON.parse(body));
  });

  it("what the server signs, their verifier accepts; with another secret it refuses it, as ours does", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: NOW });
    expect(new Webhook(current).verify(body, served([current]))).toEqual(JSON.parse(body));
    expect(() => new Webhook(replaced).verify(body, served([current]))).toThrow("No matching signature found");
    expect((await refusal({ secrets: [replaced] })).reason).toBe("NO_MATCHING_SIGNATURE");
  });

  it("during a rotation, the two signatures the server sends each verify with their own secret, in both verifiers", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: NOW });
    const headers = served([current, replaced]);
    expect(headers["webhook-signature"]).toMatch(/^v1,\S{44} v1,\S{44}$/);
    for (const secrets of [[current], [replaced], [replaced, current], [newSecret(), replaced]]) expect(await verify({ secrets, headers })).toEqual(JSON.parse(body));
    for (const secret of [current, replaced]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect((await refusal({ secrets: [newSecret()], headers })).reason).toBe("NO_MATCHING_SIGNATURE");
  });

  it("the tolerance's edges: 300 s either way is accepted, one second more refused, as their verifier does", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: NOW });
    const at = (offset: number) => served([current], seconds(NOW) + offset);
    for (const offset of [-300, 0, 300]) {
      expect(await verify({ headers: at(offset) })).toEqual(JSON.parse(body));
      expect(new Webhook(current).verify(body, at(offset))).toEqual(JSON.parse(body));
    }
    expect(await refusal({ headers: at(-301) })).toEqual({ reason: "TIMESTAMP_TOO_OLD", message: "webhook-timestamp is 301 s old, more than the 300 s allowed" });
    expect(() => new Webhook(current).verify(body, at(-301))).toThrow("Message timestamp too old");
    expect((await refusal({ headers: at(301) })).reason).toBe("TIMESTAMP_TOO_NEW");
    expect(() => new Webhook(current).verify(body, at(301))).toThrow("Message timestamp too new");
    // A tolerance of the receiver's own choosing.
    expect(await verify({ headers: at(-30), toleranceSeconds: 30 })).toEqual(JSON.parse(body));
    expect((await refusal({ headers: at(-31), toleranceSeconds: 30 })).reason).toBe("TIMESTAMP_TOO_OLD");
  });

  it("refuses a notification whose body, id or timestamp changed after signing, as their verifier does", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: NOW });
    const headers = served([current]);
    const tampered: Array<[string, Partial<VerifyNotificationOptions>]> = [
      ["body", { body: body.replace("card.lost", "card.found") }],
      ["body, one byte", { body: new TextEncoder().encode(`${body} `) }],
      ["id", { headers: { ...headers, "webhook-id": "exe_9Tg3Hs6Wq1Zc4Nv8_other" } }],
      ["timestamp", { headers: { ...headers, "webhook-timestamp": String(seconds(NOW) - 1) } }],
    ];
    for (const [what, options] of tampered) {
      expect((await refusal(options)).reason, what).toBe("NO_MATCHING_SIGNATURE");
      const theirs = { body, ...options, headers: { ...headers, ...(options.headers as object) } };
      expect(() => new Webhook(current).verify(Buffer.from(theirs.body as string | Uint8Array), theirs.headers), what).toThrow("No matching signature found");
    }
  });
});

describe("verifyNotification", () => {
  it("ignores signature versions it does not know (a v1a Ed25519 one may be added), and malformed entries", async () => {
    const good = served([current])["webhook-signature"];
    const headers = (sig: string) => ({ ...served([current]), "webhook-signature": sig });
    expect(await verify({ headers: headers(`v1a,${randomBytes(64).toString("base64")} ${good}`) })).toEqual(JSON.parse(body));
    expect(await verify({ headers: headers(`v1,not-base64! v1, ${good}`) })).toEqual(JSON.parse(body));
    expect((await refusal({ headers: headers(`v1a,${good.slice(3)}`) })).reason).toBe("NO_MATCHING_SIGNATURE");
    expect((await refusal({ headers: headers(`v2,${good.slice(3)}`) })).reason).toBe("NO_MATCHING_SIGNATURE");
  });

  it("reads headers from a fetch Headers or a record in any case; refuses one missing, empty, sent twice or malformed", async () => {
    const headers = served([current]);
    expect(await verify({ headers: new Headers(headers) })).toEqual(JSON.parse(body));
    expect(await verify({ headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), [v]])) })).toEqual(JSON.parse(body));
    for (const name of Object.keys(headers)) {
      const { [name]: _, ...without } = headers as Record<string, string>;
      expect(await refusal({ headers: without })).toEqual({ reason: "MISSING_HEADER", message: `${name} is missing` });
      expect((await refusal({ headers: { ...headers, [name]: "" } })).reason).toBe("MISSING_HEADER");
    }
    expect(await refusal({ headers: { ...headers, "webhook-signature": [headers["webhook-signature"], headers["webhook-signature"]] } })).toEqual({ reason: "INVALID_HEADER", message: "webhook-signature is sent more than once" });
    for (const timestamp of ["1795167000.5", "-1", " 1795167000", "1e9"]) expect((await refusal({ headers: { ...headers, "webhook-timestamp": timestamp } })).reason, timestamp).toBe("INVALID_HEADER");
  });

  it("refuses a body that is not JSON in UTF-8 once its signature is good", async () => {
    const bytes = Uint8Array.of(0x7b, 0xff, 0x7d);
    const headers = { ...served([current]), "webhook-signature": signature([current], id, seconds(NOW), Buffer.from(bytes).toString("latin1")) };
    expect((await refusal({ headers: served([current], seconds(NOW), "not json"), body: "not json" })).reason).toBe("INVALID_BODY");
    // Signed over other bytes than these (latin1 text is not the raw 0xff byte): not even read as a body.
    expect((await refusal({ headers, body: bytes })).reason).toBe("NO_MATCHING_SIGNATURE");
  });

  it("takes no secret that is not whsec_ and base64, and never says which it was given", async () => {
    const listenerSecret = "a-listener-secret-keyed-as-text";
    for (const secrets of [[], [listenerSecret], ["whsec_"], ["whsec_%%%"]]) {
      const error = await verify({ secrets }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).not.toContain(listenerSecret);
    }
    await expect(verify({ toleranceSeconds: -1 })).rejects.toThrow(TypeError);
  });
});
