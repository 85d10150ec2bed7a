import { describe, expect, it } from "vitest";
import { parseTimestamp, TIMESTAMP_FORM, TIMESTAMP_RANGE } from "../../src/core/timestamp.js";
import { expectInvalid } from "./helpers.js";

const P = "body.controls.extension.expiresAt";

describe("parseTimestamp", () => {
  it.each([
    ["2026-12-01T00:00:00Z", "2026-12-01T00:00:00.000Z"],
    ["2026-12-01T00:00:00.5Z", "2026-12-01T00:00:00.500Z"],
    ["2026-12-01t10:00:00z", "2026-12-01T10:00:00.000Z"],
    ["2026-12-01T02:00:00+02:00", "2026-12-01T00:00:00.000Z"],
    ["2026-11-30T19:00:00-05:00", "2026-12-01T00:00:00.000Z"],
    ["2028-02-29T00:00:00Z", "2028-02-29T00:00:00.000Z"],
    ["2000-02-29T00:00:00Z", "2000-02-29T00:00:00.000Z"],
    ["2026-12-01T00:00:00.123456789Z", "2026-12-01T00:00:00.123Z"],
    ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"],
    ["9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"],
    ["0001-01-01T01:00:00+01:00", "0001-01-01T00:00:00.000Z"],
  ])("accepts %s as %s", (input, canonical) => {
    expect(parseTimestamp(input, P)).toBe(canonical);
  });

  it.each([
    "2026-12-01",
    "2026-12-01T00:00:00",
    "2026-12-01 00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-02-29T00:00:00Z",
    "1900-02-29T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-12-00T00:00:00Z",
    "2026-12-01T24:00:00Z",
    "2026-12-01T00:60:00Z",
    "2026-12-01T00:00:60Z",
    "2026-12-01T00:00:00+24:00",
    "2026-12-01T00:00:00+02:60",
    "02026-12-01T00:00:00Z",
    "+2026-12-01T00:00:00Z",
    "10114-02-30T00:00:00Z",
    "Tue, 01 Dec 2026 00:00:00 GMT",
    "",
  ])("refuses %j as no RFC 3339 date-time", (input) => {
    expect(expectInvalid(() => parseTimestamp(input, P), "INVALID_TIMESTAMP", P).message).toBe(`${P}: ${TIMESTAMP_FORM}`);
  });

  it.each(["0000-06-01T00:00:00Z", "0000-12-31T23:59:59.999Z", "0001-01-01T00:30:00+01:00", "9999-12-31T23:00:00-05:00", "10000-01-01T00:00:00Z", "10114-01-01T00:00:00Z"])(
    "refuses %j as out of range: years 0001 to 9999 once in UTC (google.protobuf.Timestamp's and CEL's range)",
    (input) => {
      expect(expectInvalid(() => parseTimestamp(input, P), "INVALID_TIMESTAMP", P).message).toBe(`${P}: ${TIMESTAMP_RANGE}`);
    },
  );

  it.each([1796083200000, null, {}])("refuses a non-string (%j)", (input) => {
    expectInvalid(() => parseTimestamp(input, P), "INVALID_TIMESTAMP", P);
  });
});
