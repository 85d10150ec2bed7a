// The pure parts of the notify step: the Standard Webhooks signature against the specification's own
// example (https://github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md), the
// delivery's time bound against the execution lease, and the body's size bound.
import { describe, expect, it } from "vitest";
import { CelEvaluationError } from "../../src/automations/cel.js";
import { DELIVERY_DEFAULTS, deliveryTotalMs, MAX_NOTIFICATION_BODY_BYTES, notificationBody, signature } from "../../src/automations/notify.js";

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

describe("deliveryTotalMs", () => {
  it("is at most a third of the lease, so a run that retries keeps its execution", () => {
    expect(deliveryTotalMs(60_000)).toBe(DELIVERY_DEFAULTS.totalMs);
    expect(deliveryTotalMs(10_000)).toBe(3_333); // EXECUTION_LEASE_SECONDS' least value
    for (const lease of [10_000, 30_000, 60_000, 86_400_000]) expect(deliveryTotalMs(lease)).toBeLessThanOrEqual(lease / 3);
  });
});

describe("notificationBody", () => {
  it("is the value's JSON, refused past 65,536 bytes", () => {
    expect(notificationBody({ a: [1, "é"] }, "p")).toBe('{"a":[1,"é"]}');
    expect(notificationBody("x".repeat(MAX_NOTIFICATION_BODY_BYTES - 2), "p")).toHaveLength(MAX_NOTIFICATION_BODY_BYTES);
    expect(() => notificationBody("x".repeat(MAX_NOTIFICATION_BODY_BYTES - 1), "p")).toThrow(CelEvaluationError);
  });
});
