// verifyNotification with `publicKeys`: `v1a,` Ed25519 signatures as the server makes them
// (`signatureBy` of src/automations/notify.ts) and as node:crypto makes them from the specification's
// definition, accepted with the `whpk_` key; refused when the key, body or id differ; `v1,` and `v1a,`
// each checked only with their own kind of key; malformed keys a TypeError that shows no key.
import { generateKeyPairSync, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { signatureBy } from "../../src/automations/notify.js";
import { NotificationVerificationError, verifyNotification } from "../../src/client/index.js";

const NOW = 1_795_167_000_000;
const ts = Math.floor(NOW / 1000);
const id = "exe_9Tg3Hs6Wq1Zc4Nv8_tell";
const body = `{"type":"card.lost","note":"café ✓"}`;

function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  return { privateKey, whpk: `whpk_${raw.toString("base64")}` };
}
const key = keyPair();
const other = keyPair();

const headers = (signature: string, webhookId = id) => ({ "webhook-id": webhookId, "webhook-timestamp": String(ts), "webhook-signature": signature });
const served = (pair = key, signedBody = body) => headers(signatureBy({ kind: "ed25519", privateKey: pair.privateKey }, id, ts, signedBody));

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(NotificationVerificationError);
  expect((error as Error).message).not.toContain(key.whpk.slice(5, 20));
  return (error as NotificationVerificationError).reason;
}

describe("verifyNotification with Ed25519 public keys", () => {
  it("accepts the server's v1a, signature, and one node:crypto makes from the specification", async () => {
    expect(served()["webhook-signature"]).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    await expect(verifyNotification({ publicKeys: [key.whpk], headers: served(), body, now: NOW })).resolves.toEqual({ type: "card.lost", note: "café ✓" });
    const direct = sign(null, Buffer.from(`${id}.${ts}.${body}`, "utf8"), key.privateKey).toString("base64");
    await expect(verifyNotification({ publicKeys: [other.whpk, key.whpk], headers: headers(`v1,${"A".repeat(43)}= v1a,${direct}`), body: new TextEncoder().encode(body), now: NOW })).resolves.toBeTruthy();
  });

  it("refuses another key, a changed body or id, and a v1a, entry checked with secrets only", async () => {
    expect(await reasonOf(verifyNotification({ publicKeys: [other.whpk], headers: served(), body, now: NOW }))).toBe("NO_MATCHING_SIGNATURE");
    expect(await reasonOf(verifyNotification({ publicKeys: [key.whpk], headers: served(), body: body + " ", now: NOW }))).toBe("NO_MATCHING_SIGNATURE");
    expect(await reasonOf(verifyNotification({ publicKeys: [key.whpk], headers: { ...served(), "webhook-id": "exe_other_tell" }, body, now: NOW }))).toBe("NO_MATCHING_SIGNATURE");
    expect(await reasonOf(verifyNotification({ secrets: [`whsec_${Buffer.alloc(32, 1).toString("base64")}`], headers: served(), body, now: NOW }))).toBe("NO_MATCHING_SIGNATURE");
    expect(await reasonOf(verifyNotification({ publicKeys: [key.whpk], headers: headers("v1a,not-base64!"), body, now: NOW }))).toBe("NO_MATCHING_SIGNATURE");
    expect(await reasonOf(verifyNotification({ publicKeys: [key.whpk], headers: served(), body, now: NOW + 3_600_000 }))).toBe("TIMESTAMP_TOO_OLD");
  });

  it("a missing or malformed key is the caller's TypeError, naming no key", async () => {
    await expect(verifyNotification({ headers: served(), body, now: NOW })).rejects.toThrow(TypeError);
    await expect(verifyNotification({ secrets: [], publicKeys: [], headers: served(), body, now: NOW })).rejects.toThrow(TypeError);
    for (const bad of ["kjWdsaRXvCQxYV1CR+PB97kUA2W0mIiFTKBz/0okviU=", "whpk_AAAA", "whsec_kjWdsaRXvCQxYV1CR+PB97kUA2W0mIiFTKBz/0okviU=", "whpk_***"]) {
      const error = await verifyNotification({ publicKeys: [bad], headers: served(), body, now: NOW }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toBe("publicKeys[0] is not a notification public key (whpk_ and the base64 of 32 bytes)");
    }
  });
});
