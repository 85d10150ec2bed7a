import { describe, expect, it } from "vitest";
import { compareMoney, formatMoney, parseMoney, toNanos } from "../../src/funds/money.js";
import { expectInvalid, usd } from "./helpers.js";

const P = "body.limit.amount.money";
const parse = (input: unknown) => parseMoney(input, "USD", P);

describe("parseMoney", () => {
  it("accepts a plain amount and returns it unchanged", () => {
    expect(parse(usd("250", 500_000_000))).toEqual(usd("250", 500_000_000));
  });

  it("accepts zero", () => {
    expect(parse(usd("0"))).toEqual(usd("0"));
  });

  it("accepts exactly the largest amount (units 9223372036, nanos 854775807)", () => {
    const max = parse(usd("9223372036", 854_775_807));
    expect(toNanos(max)).toBe(2n ** 63n - 1n);
  });

  it("refuses one nano over the largest amount", () => {
    expectInvalid(() => parse(usd("9223372036", 854_775_808)), "MONEY_OUT_OF_RANGE", `${P}.units`);
  });

  it("refuses units 9223372037 even with zero nanos", () => {
    expectInvalid(() => parse(usd("9223372037", 0)), "MONEY_OUT_OF_RANGE", `${P}.units`);
  });

  it("refuses the int64 maximum as units (fits int64 alone, not once scaled)", () => {
    expectInvalid(() => parse(usd("9223372036854775807")), "MONEY_OUT_OF_RANGE", `${P}.units`);
  });

  it.each([
    ["negative", "-250"],
    ["minus one", "-1"],
    ["a decimal", "1.5"],
    ["a leading space", " 1"],
    ["a trailing space", "1 "],
    ["a leading plus", "+1"],
    ["twenty digits", "10000000000000000000"],
    ["an exponent", "1e9"],
    ["empty", ""],
    ["hexadecimal", "0x10"],
    ["non-ASCII digits", "١٢"],
  ])("refuses units %s (%j)", (_, units) => {
    expectInvalid(() => parse(usd(units)), "INVALID_MONEY", `${P}.units`);
  });

  it.each([
    ["a number", 250],
    ["a bigint", 250n],
    ["null", null],
    ["absent", undefined],
  ])("refuses units as %s", (_, units) => {
    expectInvalid(() => parse({ currencyCode: "USD", units, nanos: 0 }), "INVALID_MONEY", `${P}.units`);
  });

  it.each([
    ["-1", -1],
    ["1e9", 1e9],
    ["0.5", 0.5],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["a string", "5"],
    ["null", null],
    ["absent", undefined],
  ])("refuses nanos %s", (_, nanos) => {
    expectInvalid(() => parse({ currencyCode: "USD", units: "1", nanos }), "INVALID_MONEY", `${P}.nanos`);
  });

  it("accepts the nanos bounds 0 and 999999999", () => {
    expect(parse(usd("1", 0)).nanos).toBe(0);
    expect(parse(usd("1", 999_999_999)).nanos).toBe(999_999_999);
  });

  it("refuses a currency other than the fund's", () => {
    const error = expectInvalid(() => parse({ currencyCode: "EUR", units: "1", nanos: 0 }), "CURRENCY_MISMATCH", `${P}.currencyCode`);
    expect(error.message).toContain("USD");
  });

  it("compares currency codes exactly (no case folding)", () => {
    expectInvalid(() => parse({ currencyCode: "usd", units: "1", nanos: 0 }), "CURRENCY_MISMATCH", `${P}.currencyCode`);
  });

  it("refuses a missing or non-string currency code", () => {
    expectInvalid(() => parse({ units: "1", nanos: 0 }), "INVALID_MONEY", `${P}.currencyCode`);
    expectInvalid(() => parse({ currencyCode: 840, units: "1", nanos: 0 }), "INVALID_MONEY", `${P}.currencyCode`);
  });

  it.each([null, "USD 1", [], 5])("refuses a non-object money (%j)", (input) => {
    expectInvalid(() => parse(input), "INVALID_MONEY", P);
  });

  it("canonicalizes units by dropping leading zeros", () => {
    expect(parse(usd("000250", 1))).toEqual(usd("250", 1));
    expect(parse(usd("0000"))).toEqual(usd("0"));
  });

  it("drops fields that are not part of Money", () => {
    expect(parse({ ...usd("1"), extra: true })).toEqual(usd("1"));
  });
});

describe("toNanos and compareMoney", () => {
  it("converts exactly beyond the range of JS numbers", () => {
    expect(toNanos(usd("9223372036", 854_775_807))).toBe(9_223_372_036_854_775_807n);
    expect(toNanos(usd("9223372036", 854_775_806))).toBe(9_223_372_036_854_775_806n);
  });

  it("orders amounts that a float would confuse", () => {
    // As floats both are 9223372036854775808.
    expect(compareMoney(usd("9223372036", 854_775_806), usd("9223372036", 854_775_807))).toBe(-1);
    expect(compareMoney(usd("9223372036", 854_775_807), usd("9223372036", 854_775_806))).toBe(1);
  });

  it("orders by units, then nanos", () => {
    expect(compareMoney(usd("2"), usd("10"))).toBe(-1);
    expect(compareMoney(usd("1", 1), usd("1"))).toBe(1);
    expect(compareMoney(usd("7", 5), usd("7", 5))).toBe(0);
  });

  it("refuses to compare two currencies", () => {
    expect(() => compareMoney(usd("1"), { currencyCode: "EUR", units: "1", nanos: 0 })).toThrow(/USD with EUR/);
  });
});

describe("formatMoney", () => {
  it("prints units and the significant fraction", () => {
    expect(formatMoney(usd("250"))).toBe("USD 250");
    expect(formatMoney(usd("250", 500_000_000))).toBe("USD 250.5");
    expect(formatMoney(usd("0", 1))).toBe("USD 0.000000001");
  });
});
