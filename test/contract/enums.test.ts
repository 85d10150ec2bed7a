// generated/enums.ts lists exactly the contract's enumerations and values.
import { describe, expect, it } from "vitest";
import * as enums from "../../generated/enums.js";
import { contract } from "../support/contract.js";

describe("generated enum values", () => {
  it("match every enum schema of the contract", () => {
    const expected = Object.fromEntries(
      Object.entries(contract.components.schemas as Record<string, { enum?: string[] }>)
        .filter(([, s]) => Array.isArray(s.enum))
        .map(([name, s]) => [`${name}Values`, s.enum]),
    );
    expect({ ...enums }).toEqual(expected);
    expect(enums.PeriodKindValues).toContain("PERIOD_KIND_QUARTERLY");
  });
});
