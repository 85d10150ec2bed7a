import { describe, expect, it } from "vitest";
import { constantTimeEqual } from "../../src/webhooks/constant-time.js";
import { computeSignature, verifyHmac } from "../../src/webhooks/hmac.js";
import { htbS256 } from "../../src/webhooks/body.js";
import { vectors, type HmacVector } from "../support/vectors.js";
import { caught, expectApiError } from "./helpers.js";

// The shared test vectors, as the repository carries them (test/support/vectors.ts).
const VECTORS = vectors<{ vectors: HmacVector[] }>("webhook-hmac.json").vectors;

describe("computeSignature: the test vectors", () => {
  it("has the vectors", () => expect(VECTORS.length).toBeGreaterThan(1));

  it.each(VECTORS.map((v, i) => [i + 1, v] as const))("vector %i: signature and htb_s256", (_i, v) => {
    const body = Buffer.from(v.body, "utf8");
    expect(computeSignature(v.secret, v.timestamp, v.eventId, body)).toBe(v.signature);
    expect(htbS256(body)).toBe(v.htb_s256);
    expect(verifyHmac([v.secret], v.signature, v.timestamp, v.eventId, body)).toBe(0);
  });

  it("keys by the secret's UTF-8 bytes, not its base64url decoding", () => {
    const v = VECTORS[1]!;
    const body = Buffer.from(v.body, "utf8");
    const decodedKey = Buffer.from(v.secret, "base64url").toString("latin1");
    expect(computeSignature(decodedKey, v.timestamp, v.eventId, body)).not.toBe(v.signature);
  });

  it("signs the raw bytes: a re-serialized body does not verify", () => {
    const v = VECTORS[1]!;
    const reserialized = Buffer.from(JSON.stringify(JSON.parse(v.body)), "utf8");
    expect(caught(() => verifyHmac([v.secret], v.signature, v.timestamp, v.eventId, reserialized))).toBeTruthy();
  });

  it("produces base64url without padding", () => {
    const sig = computeSignature("s", "1", "e", Buffer.alloc(0));
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe("verifyHmac", () => {
  const v = VECTORS[0]!;
  const body = Buffer.from(v.body, "utf8");
  const verify = (header: string | undefined, secrets = [v.secret]) => verifyHmac(secrets, header, v.timestamp, v.eventId, body);

  it("refuses a missing or empty signature with 401 MISSING_SIGNATURE", () => {
    expectApiError(caught(() => verify(undefined)), 401, "MISSING_SIGNATURE");
    expectApiError(caught(() => verify("")), 401, "MISSING_SIGNATURE");
  });

  it.each([
    ["a wrong signature of the right length", "A" + v.signature.slice(1)],
    ["a truncated signature", v.signature.slice(0, 42)],
    ["a signature with padding", `${v.signature}=`],
    ["standard base64", v.signature.replace(/-/g, "+").replace(/_/g, "/") + "+/"],
    ["a hex digest", "a0".repeat(32)],
    ["a very long value", "x".repeat(10_000)],
    ["non-ASCII", "é✓\u0000\uffff".repeat(11)],
    ["a single character", "a"],
    ["whitespace around", ` ${v.signature} `],
    ["a v1= prefix", `v1=${v.signature}`],
  ])("refuses %s with 401 INVALID_SIGNATURE, never a throw of another kind", (_name, header) => {
    const e = expectApiError(caught(() => verify(header)), 401, "INVALID_SIGNATURE");
    expect(e.message).not.toContain(v.signature);
    expect(e.message).not.toContain(v.secret);
  });

  it("refuses a repeated header", () => {
    expectApiError(caught(() => verifyHmac([v.secret], [v.signature, v.signature], v.timestamp, v.eventId, body)), 401, "INVALID_SIGNATURE");
  });

  it("accepts the previous secret during rotation and tells which one matched", () => {
    expect(verify(v.signature, ["new-secret-not-this-one", v.secret])).toBe(1);
    expect(verify(v.signature, [v.secret, "previous"])).toBe(0);
  });

  it("refuses when no secret matches, and when none is configured", () => {
    expectApiError(caught(() => verify(v.signature, ["other", "another"])), 401, "INVALID_SIGNATURE");
    expectApiError(caught(() => verify(v.signature, [])), 401, "INVALID_SIGNATURE");
  });

  it("never accepts a signature made with an empty secret", () => {
    const forged = computeSignature("", v.timestamp, v.eventId, body);
    expectApiError(caught(() => verify(forged, [""])), 401, "INVALID_SIGNATURE");
  });

  it("binds the timestamp and the event id as received", () => {
    expectApiError(caught(() => verifyHmac([v.secret], v.signature, String(Number(v.timestamp) + 1), v.eventId, body)), 401, "INVALID_SIGNATURE");
    expectApiError(caught(() => verifyHmac([v.secret], v.signature, v.timestamp, v.eventId.toUpperCase(), body)), 401, "INVALID_SIGNATURE");
  });
});

describe("constantTimeEqual", () => {
  it("compares strings of any length without throwing", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
    expect(constantTimeEqual("", "x")).toBe(false);
  });
});
