import { describe, expect, it } from "vitest";
import {
  isEmpty,
  parseControls,
  parseExtension,
  parseLimitAndPeriod,
  parsePeriod,
  parseSuspension,
  withExtension,
  withLimit,
  withoutExtension,
  withoutLimit,
  withoutSuspension,
  withSuspension,
} from "../../src/funds/controls.js";
import type { SpendControls, SpendExtension, SpendLimit } from "../../src/funds/types.js";
import { expectInvalid, usd } from "./helpers.js";

const P = "body.controls";
const NOW = Date.parse("2026-11-20T09:30:00Z");
const NOW_ISO = "2026-11-20T09:30:00.000Z";
const parse = (input: unknown) => parseControls(input, "USD", P, NOW);

const amount = (units: string): SpendLimit => ({ amount: { money: usd(units) } });
const extension: SpendExtension = { limit: amount("500"), expiresAt: "2026-12-01T00:00:00.000Z", reason: "Quarter-end travel" };
const full: SpendControls = {
  limit: amount("250"),
  period: "PERIOD_KIND_WEEKLY",
  extension,
  suspension: { reason: "Card reported lost", suspendedAt: "2026-11-01T00:00:00.000Z" },
};

describe("parseControls", () => {
  it("accepts every field together (not a oneof) and keeps them all", () => {
    expect(parse(full)).toEqual(full);
  });

  it("accepts every limit arm", () => {
    expect(parse({ limit: { blocked: {} } })).toEqual({ limit: { blocked: {} } });
    expect(parse({ limit: { unlimited: {} }, period: "PERIOD_KIND_DAILY" })).toEqual({ limit: { unlimited: {} }, period: "PERIOD_KIND_DAILY" });
  });

  it("drops null fields and PERIOD_KIND_UNSPECIFIED", () => {
    expect(parse({ limit: amount("1"), period: "PERIOD_KIND_UNSPECIFIED", extension: null, suspension: null })).toEqual({ limit: amount("1") });
    expect(parse({})).toEqual({});
  });

  it("refuses a period without a limit", () => {
    expectInvalid(() => parse({ period: "PERIOD_KIND_MONTHLY" }), "PERIOD_WITHOUT_LIMIT", `${P}.period`);
    expectInvalid(() => parse({ limit: null, period: "PERIOD_KIND_DAILY", suspension: {} }), "PERIOD_WITHOUT_LIMIT", `${P}.period`);
  });

  it("accepts PERIOD_KIND_UNSPECIFIED without a limit: it is no period", () => {
    expect(parse({ period: "PERIOD_KIND_UNSPECIFIED" })).toEqual({});
  });

  it.each(["PERIOD_KIND_HOURLY", "monthly", "", 3])("refuses an unknown period value (%j)", (period) => {
    expectInvalid(() => parse({ limit: amount("1"), period }), "INVALID_PERIOD", `${P}.period`);
  });

  it("validates the limit with its path", () => {
    expectInvalid(() => parse({ limit: { blocked: {}, unlimited: {} } }), "LIMIT_ONEOF_VIOLATION", `${P}.limit`);
    expectInvalid(() => parse({ limit: amount("-5") }), "INVALID_MONEY", `${P}.limit.amount.money.units`);
  });

  it("refuses a blocked extension", () => {
    expectInvalid(
      () => parse({ extension: { ...extension, limit: { blocked: {} } } }),
      "LIMIT_ARM_NOT_ALLOWED",
      `${P}.extension.limit.blocked`,
    );
  });

  it("accepts an unlimited extension", () => {
    expect(parse({ extension: { limit: { unlimited: {} }, expiresAt: "2026-12-01T00:00:00Z" } })).toEqual({
      extension: { limit: { unlimited: {} }, expiresAt: "2026-12-01T00:00:00.000Z" },
    });
  });

  it("requires an extension's limit and expiry, and a valid RFC 3339 expiry", () => {
    expectInvalid(() => parse({ extension: { expiresAt: "2026-12-01T00:00:00Z" } }), "EXTENSION_LIMIT_MISSING", `${P}.extension.limit`);
    expectInvalid(() => parse({ extension: { limit: amount("1"), expiresAt: null } }), "EXTENSION_EXPIRY_MISSING", `${P}.extension.expiresAt`);
    expectInvalid(() => parse({ extension: { limit: amount("1"), expiresAt: "next week" } }), "INVALID_TIMESTAMP", `${P}.extension.expiresAt`);
  });

  it("accepts an extension that has already lapsed (it is kept, not erased)", () => {
    expect(parse({ extension: { limit: amount("1"), expiresAt: "2020-01-01T00:00:00Z" } }).extension?.expiresAt).toBe("2020-01-01T00:00:00.000Z");
  });

  it("sets suspendedAt to now when absent, keeps it when given", () => {
    expect(parse({ suspension: { reason: "r" } }).suspension).toEqual({ reason: "r", suspendedAt: NOW_ISO });
    expect(parse({ suspension: {} }).suspension).toEqual({ suspendedAt: NOW_ISO });
    expect(parse({ suspension: { suspendedAt: "2026-01-01T00:00:00Z" } }).suspension).toEqual({ suspendedAt: "2026-01-01T00:00:00.000Z" });
    expectInvalid(() => parse({ suspension: { suspendedAt: "yesterday" } }), "INVALID_TIMESTAMP", `${P}.suspension.suspendedAt`);
  });

  it("checks reasons are strings of at most 500 characters", () => {
    expect(parse({ suspension: { reason: "x".repeat(500) } }).suspension?.reason).toHaveLength(500);
    expectInvalid(() => parse({ suspension: { reason: "x".repeat(501) } }), "INVALID_ARGUMENT", `${P}.suspension.reason`);
    expectInvalid(() => parse({ extension: { ...extension, reason: 7 } }), "INVALID_ARGUMENT", `${P}.extension.reason`);
  });

  it.each([null, [], "controls"])("refuses controls, extension or suspension that are not objects (%j)", (bad) => {
    expectInvalid(() => parse(bad), "INVALID_ARGUMENT", P);
    if (bad !== null) {
      expectInvalid(() => parse({ extension: bad }), "INVALID_ARGUMENT", `${P}.extension`);
      expectInvalid(() => parse({ suspension: bad }), "INVALID_ARGUMENT", `${P}.suspension`);
    }
  });
});

describe("parseLimitAndPeriod (the SetLimit body)", () => {
  const parseBody = (limit: unknown, period: unknown) => parseLimitAndPeriod(limit, period, "my-limit", "USD", "body");

  it("accepts an amount with or without a period", () => {
    expect(parseBody(amount("9"), "PERIOD_KIND_YEARLY")).toEqual({ limit: amount("9"), period: "PERIOD_KIND_YEARLY" });
    expect(parseBody(amount("9"), undefined)).toEqual({ limit: amount("9"), period: undefined });
  });

  it("refuses other arms in the my-limit context", () => {
    expectInvalid(() => parseBody({ unlimited: {} }, undefined), "LIMIT_ARM_NOT_ALLOWED", "body.limit.unlimited");
  });

  it("refuses a period alone, and leaves a missing limit to the caller", () => {
    expectInvalid(() => parseBody(undefined, "PERIOD_KIND_DAILY"), "PERIOD_WITHOUT_LIMIT", "body.period");
    expect(parseBody(null, undefined)).toEqual({ limit: null, period: undefined });
  });

  it("reports an unknown period before a missing limit", () => {
    expectInvalid(() => parseBody(undefined, "PERIOD_KIND_FORTNIGHTLY"), "INVALID_PERIOD", "body.period");
  });
});

describe("parsePeriod", () => {
  it("maps absent and UNSPECIFIED to no period", () => {
    expect(parsePeriod(undefined, "p")).toBeUndefined();
    expect(parsePeriod(null, "p")).toBeUndefined();
    expect(parsePeriod("PERIOD_KIND_UNSPECIFIED", "p")).toBeUndefined();
    expect(parsePeriod("PERIOD_KIND_QUARTERLY", "p")).toBe("PERIOD_KIND_QUARTERLY");
  });
});

describe("parseExtension and parseSuspension", () => {
  it("omit an absent reason", () => {
    expect(parseExtension({ limit: amount("1"), expiresAt: "2026-12-01T00:00:00Z" }, "USD", "e")).toEqual({
      limit: amount("1"),
      expiresAt: "2026-12-01T00:00:00.000Z",
    });
    expect(parseSuspension({ reason: null }, "s", NOW)).toEqual({ suspendedAt: NOW_ISO });
  });
});

describe("mutations keep every other field", () => {
  const frozen = Object.freeze({ ...full });

  it("withLimit replaces limit and period, keeping suspension and extension", () => {
    expect(withLimit(frozen, amount("99"), "PERIOD_KIND_DAILY")).toEqual({ ...full, limit: amount("99"), period: "PERIOD_KIND_DAILY" });
  });

  it("withLimit without a period drops the old period (it denominated the old limit)", () => {
    expect(withLimit(frozen, amount("99"))).toEqual({ limit: amount("99"), extension: full.extension, suspension: full.suspension });
    expect(withLimit(frozen, amount("99"), "PERIOD_KIND_UNSPECIFIED")).not.toHaveProperty("period");
  });

  it("withLimit creates controls for a row that had none", () => {
    expect(withLimit(null, { blocked: {} })).toEqual({ limit: { blocked: {} } });
  });

  it("withoutLimit drops limit and period only", () => {
    expect(withoutLimit(frozen)).toEqual({ extension: full.extension, suspension: full.suspension });
  });

  it("withSuspension keeps limit, period and extension", () => {
    const out = withSuspension({ limit: amount("250"), period: "PERIOD_KIND_WEEKLY", extension }, "Card reported lost", NOW);
    expect(out).toEqual({
      limit: amount("250"),
      period: "PERIOD_KIND_WEEKLY",
      extension,
      suspension: { reason: "Card reported lost", suspendedAt: NOW_ISO },
    });
  });

  it("withSuspension without a reason stores none", () => {
    expect(withSuspension(null, undefined, NOW)).toEqual({ suspension: { suspendedAt: NOW_ISO } });
  });

  it("re-suspending keeps the original suspendedAt and updates the reason", () => {
    const out = withSuspension(frozen, "Fraud review", NOW);
    expect(out.suspension).toEqual({ reason: "Fraud review", suspendedAt: "2026-11-01T00:00:00.000Z" });
    expect(out.limit).toEqual(full.limit);
  });

  it("re-suspending without a reason keeps the old one", () => {
    expect(withSuspension(frozen, undefined, NOW).suspension).toEqual(full.suspension);
  });

  it("withoutSuspension restores exactly the controls the suspension froze", () => {
    const before: SpendControls = { limit: amount("250"), period: "PERIOD_KIND_WEEKLY", extension };
    expect(withoutSuspension(withSuspension(before, "hold", NOW))).toEqual(before);
  });

  it("withExtension sets the extension and never changes the period", () => {
    const ext: SpendExtension = { limit: { unlimited: {} }, expiresAt: "2027-01-01T00:00:00.000Z" };
    expect(withExtension(frozen, ext)).toEqual({ ...full, extension: ext });
  });

  it("withoutExtension drops the extension only", () => {
    expect(withoutExtension(frozen)).toEqual({ limit: full.limit, period: full.period, suspension: full.suspension });
  });

  it("never mutates its input", () => {
    const input = structuredClone(full);
    withLimit(input, amount("1"));
    withoutLimit(input);
    withSuspension(input, "x", NOW);
    withoutSuspension(input);
    withExtension(input, extension);
    withoutExtension(input);
    expect(input).toEqual(full);
  });
});

describe("isEmpty", () => {
  it("is true only with no limit, no extension and no suspension", () => {
    expect(isEmpty(null)).toBe(true);
    expect(isEmpty({})).toBe(true);
    expect(isEmpty({ limit: null, extension: null, suspension: null })).toBe(true);
    expect(isEmpty({ limit: amount("1") })).toBe(false);
    expect(isEmpty({ extension })).toBe(false);
    expect(isEmpty({ suspension: {} })).toBe(false);
  });

  it("follows the mutations down to an empty row", () => {
    expect(isEmpty(withoutExtension(withoutSuspension(withoutLimit(full))))).toBe(true);
  });
});
