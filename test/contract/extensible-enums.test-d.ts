// Enumerations may gain values (seed 2.3 and 9): the generated types must let a client hold a value
// it does not know, through openapi-fetch's request and response helpers too, while the known
// values stay named; and a SpendLimit stays one arm.
import type { Readable, Writable } from "openapi-typescript-helpers";
import { describe, expectTypeOf, it } from "vitest";
import type { components } from "../../generated/api.js";
import type { KnownPeriodKind, KnownRole } from "../../generated/enums.js";

type S = components["schemas"];

describe("generated enum types", () => {
  it("accept values a client does not know yet", () => {
    expectTypeOf<"PERIOD_KIND_FORTNIGHTLY">().toExtend<S["PeriodKind"]>();
    expectTypeOf<"EFFECTIVE_DECISION_SOMETHING_NEW">().toExtend<S["EffectiveDecision"]>();
    expectTypeOf<"ROLE_AUDITOR">().toExtend<S["Role"]>();
    expectTypeOf<"AUTOMATION_EXECUTION_STATE_CANCELLED">().toExtend<S["AutomationExecutionState"]>();
  });

  it("stay plain strings as the typed client reads and writes them", () => {
    expectTypeOf<NonNullable<Readable<S["SpendControls"]>["period"]>>().toEqualTypeOf<string>();
    expectTypeOf<NonNullable<Writable<S["SpendControls"]>["period"]>>().toEqualTypeOf<string>();
    expectTypeOf<Readable<S["EffectiveLimit"]>["decision"]>().toEqualTypeOf<string>();
  });

  it("name the known values", () => {
    expectTypeOf<KnownPeriodKind>().toEqualTypeOf<
      "PERIOD_KIND_UNSPECIFIED" | "PERIOD_KIND_DAILY" | "PERIOD_KIND_WEEKLY" | "PERIOD_KIND_MONTHLY" | "PERIOD_KIND_QUARTERLY" | "PERIOD_KIND_YEARLY"
    >();
    expectTypeOf<KnownRole>().toExtend<S["Role"]>();
  });

  it("keep a SpendLimit to one arm", () => {
    type Limit = S["SpendLimit"];
    const amount = { amount: { money: { currencyCode: "USD", units: "1", nanos: 0 } } };
    expectTypeOf(amount).toExtend<Limit>();
    expectTypeOf({ ...amount, blocked: {} }).not.toExtend<Limit>();
    expectTypeOf({ blocked: {}, unlimited: {} }).not.toExtend<Limit>();
  });
});
