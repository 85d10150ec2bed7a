// Enumerations may gain values (seed 2.3 and 9): the generated types must let a client hold a value
// it does not know, through the typed client's request and response types too, while the known
// values stay named; and a SpendLimit stays one arm. (`Extract<T, Known>` is `never` for a plain
// `string`, which expectTypeOf's equality does not tell from `"A" | (string & {})`.)
import { describe, expectTypeOf, it } from "vitest";
import type { components } from "../../generated/api.js";
import type { EffectiveDecision, KnownEffectiveDecision, KnownPeriodKind, KnownRole, PeriodKind } from "../../generated/enums.js";
import type { Readable, Writable } from "../../src/client/fetch-types.js";

type S = components["schemas"];

describe("generated enum types", () => {
  it("accept values a client does not know yet", () => {
    expectTypeOf<"PERIOD_KIND_FORTNIGHTLY">().toExtend<S["PeriodKind"]>();
    expectTypeOf<"EFFECTIVE_DECISION_SOMETHING_NEW">().toExtend<S["EffectiveDecision"]>();
    expectTypeOf<"ROLE_AUDITOR">().toExtend<S["Role"]>();
    expectTypeOf<"AUTOMATION_EXECUTION_STATE_CANCELLED">().toExtend<S["AutomationExecutionState"]>();
  });

  it("are the generated/enums.ts unions", () => {
    expectTypeOf<S["PeriodKind"]>().toEqualTypeOf<PeriodKind>();
    expectTypeOf<Extract<S["PeriodKind"], KnownPeriodKind>>().toEqualTypeOf<KnownPeriodKind>();
    expectTypeOf<S["EffectiveDecision"]>().toEqualTypeOf<EffectiveDecision>();
  });

  it("keep their known values, and any other string, as the typed client reads and writes them", () => {
    // Exclude, not NonNullable: `T & {}` would fold each known value into `string & {}`.
    type ReadPeriod = Exclude<Readable<S["SpendControls"]>["period"], undefined>;
    type WrittenPeriod = Exclude<Writable<S["SpendControls"]>["period"], undefined>;
    type ReadDecision = Readable<S["EffectiveLimit"]>["decision"];
    expectTypeOf<Extract<ReadPeriod, KnownPeriodKind>>().toEqualTypeOf<KnownPeriodKind>();
    expectTypeOf<Extract<WrittenPeriod, KnownPeriodKind>>().toEqualTypeOf<KnownPeriodKind>();
    expectTypeOf<Extract<ReadDecision, KnownEffectiveDecision>>().toEqualTypeOf<KnownEffectiveDecision>();
    // Not openapi-typescript-helpers' object of String's methods: still a string, and any string fits.
    expectTypeOf<ReadPeriod>().toExtend<string>();
    expectTypeOf<WrittenPeriod>().toExtend<string>();
    expectTypeOf<ReadDecision>().toExtend<string>();
    expectTypeOf<string>().toExtend<WrittenPeriod>();
    expectTypeOf<string>().toExtend<ReadDecision>();
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
