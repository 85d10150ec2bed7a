// The pure parts of the notify step: the Standard Webhooks signature against the specification's own
// example (https://github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md), how a
// receiver's Retry-After is read, and the body's size bound.
import { describe, expect, it } from "vitest";
import { CelEvaluationError } from "../../src/automations/cel.js";
import { MAX_NOTIFICATION_BODY_BYTES, notificationBody, retryAfterMs, signature } from "../../src/automations/notify.js";

describe("signature", () => {
  it("matches the example of the Standard Webhooks specification", () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    expect(signature([secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}')).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("carries one signature per secret, the current one first, separated by a space", () => {
    const a = `whsec_${Buffer.alloc(32, 1).toString("base64")}`;
    const b = `whsec_${Buffer.alloc(32, 2).toString("base64")}`;
    const both = signature([a, b], "id", 1, "{}");
    expect(both.split(" ")).toEqual([signature([a], "id", 1, "{}"), signature([b], "id", 1, "{}")]);
  });
});

describe("retryAfterMs", () => {
  const now = Date.parse("2026-11-29T10:00:00Z");
  it("reads seconds and HTTP dates, a date past as 0", () => {
    expect(retryAfterMs("120", now)).toBe(120_000);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
    expect(retryAfterMs("Sun, 29 Nov 2026 10:05:00 GMT", now)).toBe(300_000);
    expect(retryAfterMs("Sun, 29 Nov 2026 09:00:00 GMT", now)).toBe(0);
  });
  it("is at most a day: a receiver cannot park a notification for longer", () => {
    expect(retryAfterMs("9999999999", now)).toBe(86_400_000);
    expect(retryAfterMs("Fri, 01 Jan 2100 00:00:00 GMT", now)).toBe(86_400_000);
  });
  it("is undefined when absent or unreadable", () => {
    for (const value of [undefined, ["1", "2"], "", "-5", "1.5", "soon", "12345678901"]) expect(retryAfterMs(value, now)).toBeUndefined();
  });
});

describe("notificationBody", () => {
  it("is the value's JSON, refused past 65,536 bytes", () => {
    expect(notificationBody({ a: [1, "é"] }, "p")).toBe('{"a":[1,"é"]}');
    expect(notificationBody("x".repeat(MAX_NOTIFICATION_BODY_BYTES - 2), "p")).toHaveLength(MAX_NOTIFICATION_BODY_BYTES);
    expect(() => notificationBody("x".repeat(MAX_NOTIFICATION_BODY_BYTES - 1), "p")).toThrow(CelEvaluationError);
  });
});
