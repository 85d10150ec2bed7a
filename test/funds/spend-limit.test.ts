import { describe, expect, it } from "vitest";
import { compareLimits, limitKind, parseSpendLimit } from "../../src/funds/spends/spend-limit.js";
import type { LimitContext } from "../../src/funds/spends/spend-limit.js";
import type { SpendLimit } from "../../src/funds/types.js";
import { expectInvalid, usd } from "./helpers.js";

const P = "body.limit";
const parse = (input: unknown, context: LimitContext = "row") => parseSpendLimit(input, context, "USD", P);

const amount = (units: string, nanos = 0): SpendLimit => ({ amount: { money: usd(units, nanos) } });
const blocked: SpendLimit = { blocked: {} };
const unlimited: SpendLimit = { unlimited: {} };

describe("parseSpendLimit: the oneof", () => {
  it("accepts each arm alone in a row", () => {
    expect(parse(amount("250"))).toEqual(amount("250"));
    expect(parse({ blocked: {} })).toEqual(blocked);
    expect(parse({ unlimited: {} })).toEqual(unlimited);
  });

  it("treats arms set to null as absent and drops them", () => {
    const out = parse({ amount: null, blocked: {}, unlimited: null });
    expect(out).toEqual(blocked);
    expect(Object.keys(out)).toEqual(["blocked"]);
  });

  it.each([
    [{ amount: { money: usd("1") }, blocked: {} }, "amount and blocked"],
    [{ amount: { money: usd("1") }, unlimited: {} }, "amount and unlimited"],
    [{ blocked: {}, unlimited: {} }, "blocked and unlimited"],
    [{ amount: { money: usd("1") }, blocked: {}, unlimited: {} }, "amount and blocked and unlimited"],
  ])("refuses two or more arms (%j)", (input, named) => {
    const error = expectInvalid(() => parse(input), "LIMIT_ONEOF_VIOLATION", P);
    expect(error.message).toContain(named);
  });

  it("refuses two arms even where only one of them is legal", () => {
    expectInvalid(() => parse({ amount: { money: usd("1") }, blocked: {} }, "my-limit"), "LIMIT_ONEOF_VIOLATION", P);
  });

  it.each([{}, { amount: null, blocked: null, unlimited: null }, { other: {} }])("refuses no arm (%j)", (input) => {
    expectInvalid(() => parse(input), "LIMIT_KIND_MISSING", P);
  });

  it.each([null, "amount", [], 3])("refuses a limit that is not an object (%j)", (input) => {
    expectInvalid(() => parse(input), "INVALID_ARGUMENT", P);
  });

  it("requires money on an amount", () => {
    expectInvalid(() => parse({ amount: {} }), "LIMIT_MONEY_MISSING", `${P}.amount.money`);
    expectInvalid(() => parse({ amount: { money: null } }), "LIMIT_MONEY_MISSING", `${P}.amount.money`);
  });

  it("refuses an amount that is not an object", () => {
    expectInvalid(() => parse({ amount: "250" }), "INVALID_ARGUMENT", `${P}.amount`);
  });

  it("validates the money with its full field path", () => {
    expectInvalid(() => parse({ amount: { money: usd("-1") } }), "INVALID_MONEY", `${P}.amount.money.units`);
    expectInvalid(
      () => parse({ amount: { money: { currencyCode: "EUR", units: "1", nanos: 0 } } }),
      "CURRENCY_MISMATCH",
      `${P}.amount.money.currencyCode`,
    );
  });

  it("returns canonical money", () => {
    expect(parse(amount("0042"))).toEqual(amount("42"));
  });

  it.each(["blocked", "unlimited"])("requires %s to be the empty object", (arm) => {
    expectInvalid(() => parse({ [arm]: { reason: "x" } }), "INVALID_ARGUMENT", `${P}.${arm}`);
    expectInvalid(() => parse({ [arm]: true }), "INVALID_ARGUMENT", `${P}.${arm}`);
    expectInvalid(() => parse({ [arm]: [] }), "INVALID_ARGUMENT", `${P}.${arm}`);
  });
});

describe("parseSpendLimit: arms legal per context", () => {
  it("my-limit accepts only amount", () => {
    expect(parse(amount("5"), "my-limit")).toEqual(amount("5"));
    expectInvalid(() => parse({ blocked: {} }, "my-limit"), "LIMIT_ARM_NOT_ALLOWED", `${P}.blocked`);
    expectInvalid(() => parse({ unlimited: {} }, "my-limit"), "LIMIT_ARM_NOT_ALLOWED", `${P}.unlimited`);
  });

  it("an extension never accepts blocked", () => {
    expect(parse(amount("5"), "extension")).toEqual(amount("5"));
    expect(parse({ unlimited: {} }, "extension")).toEqual(unlimited);
    expectInvalid(() => parse({ blocked: {} }, "extension"), "LIMIT_ARM_NOT_ALLOWED", `${P}.blocked`);
  });

  it("a row accepts all three", () => {
    for (const limit of [amount("5"), blocked, unlimited]) expect(parse(limit, "row")).toEqual(limit);
  });
});

describe("limitKind", () => {
  it("names the set arm", () => {
    expect(limitKind(amount("1"))).toBe("amount");
    expect(limitKind(blocked)).toBe("blocked");
    expect(limitKind(unlimited)).toBe("unlimited");
    expect(limitKind({ amount: null, blocked: null, unlimited: {} })).toBe("unlimited");
  });
});

describe("compareLimits: blocked < any amount < unlimited", () => {
  it("puts blocked below every amount, even zero", () => {
    expect(compareLimits(blocked, amount("0"))).toBeLessThan(0);
    expect(compareLimits(amount("0"), blocked)).toBeGreaterThan(0);
  });

  it("puts unlimited above every amount, even the largest", () => {
    expect(compareLimits(amount("9223372036", 854_775_807), unlimited)).toBeLessThan(0);
    expect(compareLimits(unlimited, amount("9223372036", 854_775_807))).toBeGreaterThan(0);
  });

  it("orders amounts by exact money", () => {
    expect(compareLimits(amount("9223372036", 854_775_806), amount("9223372036", 854_775_807))).toBeLessThan(0);
    expect(compareLimits(amount("10"), amount("9", 999_999_999))).toBeGreaterThan(0);
    expect(compareLimits(amount("3", 1), amount("3", 1))).toBe(0);
  });

  it("ties like with like", () => {
    expect(compareLimits(blocked, { blocked: {} })).toBe(0);
    expect(compareLimits(unlimited, { unlimited: {} })).toBe(0);
  });

  it("sorts a mixed list into the total order", () => {
    const sorted = [unlimited, amount("100"), blocked, amount("5", 1), amount("5")].sort(compareLimits);
    expect(sorted).toEqual([blocked, amount("5"), amount("5", 1), amount("100"), unlimited]);
  });
});
