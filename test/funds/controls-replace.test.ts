// The domain helpers the funds services add on top of controls.ts: whole-set replacement (app caps,
// the tenant default), the future-expiry rule, value equality and the currency a set holds.
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/canonical-json.js";
import { amountCurrency, replaceControls, requireFutureExpiry, sameControls } from "../../src/funds/controls.js";
import type { SpendControls, SpendLimit } from "../../src/funds/types.js";
import { expectInvalid, usd } from "./helpers.js";

const P = "body.controls";
const NOW = Date.parse("2026-11-20T09:30:00Z");
const NOW_ISO = "2026-11-20T09:30:00.000Z";
const FUTURE = "2026-12-01T00:00:00.000Z";
const PAST = "2026-11-01T00:00:00.000Z";
const amount = (units: string): SpendLimit => ({ amount: { money: usd(units) } });
const replace = (input: unknown, stored: SpendControls | null = null) => replaceControls(input, stored, "USD", P, NOW);

describe("replaceControls", () => {
  it("validates like parseControls (arms, periods, money)", () => {
    expectInvalid(() => replace({ period: "PERIOD_KIND_DAILY" }), "PERIOD_WITHOUT_LIMIT", `${P}.period`);
    expectInvalid(() => replace({ extension: { limit: { blocked: {} }, expiresAt: FUTURE } }), "LIMIT_ARM_NOT_ALLOWED", `${P}.extension.limit.blocked`);
    expectInvalid(() => replace({ limit: { amount: { money: { ...usd("1"), currencyCode: "EUR" } } } }), "CURRENCY_MISMATCH", `${P}.limit.amount.money.currencyCode`);
  });

  it("sets suspendedAt to now for a new suspension, ignoring a value sent", () => {
    expect(replace({ suspension: { reason: "r", suspendedAt: PAST } })).toEqual({ suspension: { reason: "r", suspendedAt: NOW_ISO } });
  });

  it("keeps the stored suspendedAt while the suspension stays, taking the new reason", () => {
    const stored: SpendControls = { suspension: { reason: "old", suspendedAt: PAST } };
    expect(replace({ limit: amount("1"), suspension: { reason: "new", suspendedAt: FUTURE } }, stored)).toEqual({
      limit: amount("1"),
      suspension: { reason: "new", suspendedAt: PAST },
    });
  });

  it("refuses an extension that is not in the future, unless it equals the stored one", () => {
    expectInvalid(() => replace({ extension: { limit: amount("1"), expiresAt: PAST } }), "EXTENSION_EXPIRY_NOT_IN_FUTURE", `${P}.extension.expiresAt`);
    expectInvalid(() => replace({ extension: { limit: amount("1"), expiresAt: NOW_ISO } }), "EXTENSION_EXPIRY_NOT_IN_FUTURE", `${P}.extension.expiresAt`);
    const stored: SpendControls = { extension: { limit: amount("1"), expiresAt: PAST, reason: "r" } };
    // The same extension, written differently (offset, key order), is the stored one.
    expect(replace({ extension: { reason: "r", expiresAt: "2026-11-01T01:00:00+01:00", limit: amount("1") } }, stored)).toEqual(stored);
    expectInvalid(() => replace({ extension: { limit: amount("2"), expiresAt: PAST, reason: "r" } }, stored), "EXTENSION_EXPIRY_NOT_IN_FUTURE", `${P}.extension.expiresAt`);
  });

  it("may answer empty controls (the caller decides what that means)", () => {
    expect(replace({})).toEqual({});
  });
});

describe("requireFutureExpiry", () => {
  it("accepts only an expiry strictly after now", () => {
    expect(requireFutureExpiry({ limit: amount("1"), expiresAt: FUTURE }, NOW, "x")).toEqual({ limit: amount("1"), expiresAt: FUTURE });
    expectInvalid(() => requireFutureExpiry({ limit: amount("1"), expiresAt: NOW_ISO }, NOW, "x"), "EXTENSION_EXPIRY_NOT_IN_FUTURE", "x");
    expectInvalid(() => requireFutureExpiry({ limit: amount("1") }, NOW, "x"), "EXTENSION_EXPIRY_NOT_IN_FUTURE", "x");
  });
});

describe("sameControls and canonicalJson", () => {
  it("compare by value, whatever the key order; null and undefined are no controls", () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe('{"a":{"c":3,"d":2},"b":1}');
    expect(sameControls({ limit: amount("1"), period: "PERIOD_KIND_DAILY" }, { period: "PERIOD_KIND_DAILY", limit: amount("1") })).toBe(true);
    expect(sameControls({ limit: amount("1") }, { limit: amount("2") })).toBe(false);
    expect(sameControls(null, undefined)).toBe(true);
    expect(sameControls(null, {})).toBe(true);
  });
});

describe("amountCurrency", () => {
  it("is the currency of the base limit's or the extension's amount, else null", () => {
    expect(amountCurrency(null)).toBeNull();
    expect(amountCurrency({ limit: { blocked: {} }, extension: { limit: { unlimited: {} }, expiresAt: FUTURE } })).toBeNull();
    expect(amountCurrency({ limit: amount("1") })).toBe("USD");
    expect(amountCurrency({ limit: { blocked: {} }, extension: { limit: { amount: { money: { currencyCode: "EUR", units: "1", nanos: 0 } } }, expiresAt: FUTURE } })).toBe("EUR");
  });
});
