// Enumerations may gain values (seed 2.3 and 9): the generated types must let a client hold a value
// it does not know, while keeping the known values, and keep closed types closed.
import { describe, expectTypeOf, it } from "vitest";
import type { components } from "../../generated/api.js";

type S = components["schemas"];

describe("generated enum types", () => {
  it("accept values a client does not know yet", () => {
    expectTypeOf<"PERIOD_KIND_FORTNIGHTLY">().toExtend<S["PeriodKind"]>();
    expectTypeOf<"EFFECTIVE_DECISION_SOMETHING_NEW">().toExtend<S["EffectiveDecision"]>();
    expectTypeOf<"ROLE_AUDITOR">().toExtend<S["Role"]>();
    expectTypeOf<"AUTOMATION_EXECUTION_STATE_CANCELLED">().toExtend<S["AutomationExecutionState"]>();
  });

  it("still name the known values", () => {
    expectTypeOf<S["PeriodKind"]>().toExtend<string>();
    expectTypeOf<Extract<S["PeriodKind"], "PERIOD_KIND_MONTHLY">>().toEqualTypeOf<"PERIOD_KIND_MONTHLY">();
  });

  it("keep a SpendLimit to one arm", () => {
    type Limit = S["SpendLimit"];
    const amount = { amount: { money: { currencyCode: "USD", units: "1", nanos: 0 } } };
    expectTypeOf(amount).toExtend<Limit>();
    expectTypeOf({ ...amount, blocked: {} }).not.toExtend<Limit>();
    expectTypeOf({ blocked: {}, unlimited: {} }).not.toExtend<Limit>();
  });
});
