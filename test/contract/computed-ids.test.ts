// Ids in paths: a user or app id that a step computes with CEL is refused unless the contract's path
// parameters (UserId, AppId) would take it, and the webhook intake answers 404 without a lookup for a
// listener id its parameter (ListenerId) would refuse. Both use one copy of that shape (isPathId);
// this test fails when it drifts from the contract.
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { checkComputedId } from "../../src/automations/automation-input.js";
import { isPathId } from "../../src/core/ids.js";
import { contract } from "../support/contract.js";

const accepts = (value: string) => {
  try {
    checkComputedId("userIdCel", value);
    return true;
  } catch {
    return false;
  }
};

const CANDIDATES = ["a", "2Qk3mN8rT1vX9yZ0", "app-salesforce", "a.b_c:d-e", "A".repeat(128), "A".repeat(129), "", "-a", ".a", "_a", "a b", "a/b", "a%2F", "é", "a\n", "a\u0000b", "1", "9z"];

describe("ids computed by steps", () => {
  for (const name of ["UserId", "AppId", "ListenerId"]) {
    it(`are refused exactly where the contract's ${name} parameter refuses them`, () => {
      const validate = new Ajv2020.default({ strict: false }).compile(contract.components.parameters[name].schema);
      const expected = CANDIDATES.map((v) => [v, validate(v)]);
      expect(expected.some(([, ok]) => !ok)).toBe(true);
      expect(CANDIDATES.map((v) => [v, isPathId(v)])).toEqual(expected);
      expect(CANDIDATES.map((v) => [v, accepts(v)])).toEqual(expected);
    });
  }
});
