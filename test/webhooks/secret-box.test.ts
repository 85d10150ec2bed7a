// Sealed webhook secrets: AES-256-GCM bound to the listener id, and the cache of opened secrets,
// which must never answer for another listener or for a sealed text that does not open.
import { createHash, createHmac, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SecretBox } from "../../src/webhooks/secret-box.js";

const box = () => new SecretBox(randomBytes(32));

describe("SecretBox", () => {
  it("opens what it sealed, again and again", () => {
    const b = box();
    const sealed = b.seal("whsec_one", "wh_a");
    expect(sealed).not.toContain("whsec_one");
    expect(b.open(sealed, "wh_a")).toBe("whsec_one");
    expect(b.open(sealed, "wh_a")).toBe("whsec_one");
  });

  it("a secret opened for one listener does not open for another, cached or not", () => {
    const b = box();
    const sealed = b.seal("whsec_one", "wh_a");
    expect(() => b.open(sealed, "wh_b")).toThrow();
    expect(b.open(sealed, "wh_a")).toBe("whsec_one");
    expect(() => b.open(sealed, "wh_b")).toThrow();
  });

  it("a tampered sealed text or another key's does not open", () => {
    const b = box();
    const sealed = b.seal("whsec_one", "wh_a");
    b.open(sealed, "wh_a");
    const parts = sealed.split(".");
    const data = Buffer.from(parts[2]!, "base64url");
    data[0] = data[0]! ^ 1;
    expect(() => b.open([parts[0], parts[1], data.toString("base64url"), parts[3]].join("."), "wh_a")).toThrow();
    expect(() => box().open(sealed, "wh_a")).toThrow();
  });

  it("stays correct past the size of its cache", () => {
    const b = box();
    const sealed = Array.from({ length: 1500 }, (_, i) => b.seal(`whsec_${i}`, `wh_${i}`));
    sealed.forEach((s, i) => expect(b.open(s, `wh_${i}`)).toBe(`whsec_${i}`));
    expect(b.open(sealed[0]!, "wh_0")).toBe("whsec_0");
  });

  it("digests a secret under its key and purpose: the same again, another for another key or purpose, never the plain hash", () => {
    const key = randomBytes(32);
    const [b, same, other] = [new SecretBox(key), new SecretBox(Buffer.from(key)), box()];
    const d = b.digest("typed in GitHub's form 42", "fingerprint");
    expect(same.digest("typed in GitHub's form 42", "fingerprint")).toBe(d);
    expect(b.digest("typed in GitHub's form 43", "fingerprint")).not.toBe(d);
    expect(other.digest("typed in GitHub's form 42", "fingerprint")).not.toBe(d);
    expect(b.digest("typed in GitHub's form 42", "another purpose")).not.toBe(d);
    expect(d).not.toBe(createHash("sha256").update("typed in GitHub's form 42").digest("base64url"));
    expect(d).not.toBe(createHmac("sha256", key).update("typed in GitHub's form 42").digest("base64url"));
  });
});
