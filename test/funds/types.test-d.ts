// The funds domain shapes are the contract's wire shapes: each must fit the generated type, so a
// value the domain produces is a valid response and drift in the contract fails the typecheck.
import { describe, expectTypeOf, it } from "vitest";
import type { components } from "../../generated/api.js";
import type { EffectiveLimitView } from "../../src/funds/effective.js";
import type { SpendUsageView } from "../../src/funds/spends/spend-usage.js";
import type { Money, SpendControls, SpendExtension, SpendLimit, SpendSuspension } from "../../src/funds/types.js";

type S = components["schemas"];

describe("funds domain types", () => {
  it("fit the contract's schemas", () => {
    expectTypeOf<Money>().toExtend<S["Money"]>();
    expectTypeOf<SpendLimit>().toExtend<S["SpendLimit"]>();
    expectTypeOf<SpendExtension>().toExtend<S["SpendExtension"]>();
    expectTypeOf<SpendSuspension>().toExtend<S["SpendSuspension"]>();
    expectTypeOf<SpendControls>().toExtend<S["SpendControls"]>();
    expectTypeOf<EffectiveLimitView>().toExtend<S["EffectiveLimit"]>();
    expectTypeOf<SpendUsageView>().toExtend<S["SpendUsage"]>();
  });
});
