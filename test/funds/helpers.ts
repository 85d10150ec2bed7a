// Assertions shared by the funds tests.
import { expect } from "vitest";
import { ApiError } from "../../src/core/errors.js";

/** Runs `fn` and asserts it throws a 400 ApiError with this reason on this field. */
export function expectInvalid(fn: () => unknown, reason: string, field: string): ApiError {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(ApiError);
  const error = thrown as ApiError;
  expect({ status: error.status, reason: error.reason, fields: error.violations.map((v) => v.field) }).toEqual({
    status: 400,
    reason,
    fields: [field],
  });
  return error;
}

export const usd = (units: string, nanos = 0) => ({ currencyCode: "USD", units, nanos });
