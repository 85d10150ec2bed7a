// The client names what it knows and holds what it does not: `reason` and every extensible
// enumeration are the union of the contract's known values and any other string, so a partner gets
// completions and narrowing, and a value added to the contract later still type-checks. Plain
// `string` would lose the names: `Extract<T, Known>` is then `never`, and these assertions fail.
// (expectTypeOf's equality does not tell `string` from `"A" | (string & {})`.)
import { describe, expectTypeOf, it } from "vitest";
import {
  ApiRequestError,
  errorReason,
  type AutomationExecutionState,
  type ErrorReason,
  type KnownAutomationExecutionState,
  type KnownErrorReason,
  type KnownPeriodKind,
  type KnownRole,
  type KnownSpendAuthorizationState,
  type PeriodKind,
  type Role,
  type SpendAuthorizationState,
} from "../../src/client/index.js";

describe("client types", () => {
  it("type ApiRequestError.reason and errorReason as the known reasons or any other", () => {
    // Exclude, not NonNullable: `T & {}` would fold each known reason into `string & {}`.
    type Reason = Exclude<ApiRequestError["reason"], undefined>;
    expectTypeOf<Reason>().toEqualTypeOf<ErrorReason>();
    expectTypeOf<ReturnType<typeof errorReason>>().toEqualTypeOf<ErrorReason | undefined>();
    expectTypeOf<Extract<Reason, KnownErrorReason>>().toEqualTypeOf<KnownErrorReason>();
    expectTypeOf<KnownErrorReason>().toExtend<Reason>();
    expectTypeOf<"ROLE_NOT_ALLOWED">().toExtend<Reason>();
    expectTypeOf<"A_REASON_ADDED_LATER">().toExtend<Reason>();
    expectTypeOf<Reason>().toExtend<string>();
  });

  it("type each extensible enumeration as its known values or any other", () => {
    expectTypeOf<Extract<SpendAuthorizationState, KnownSpendAuthorizationState>>().toEqualTypeOf<KnownSpendAuthorizationState>();
    expectTypeOf<"SPEND_AUTHORIZATION_STATE_PENDING">().toExtend<SpendAuthorizationState>();
    expectTypeOf<"SPEND_AUTHORIZATION_STATE_DISPUTED">().toExtend<SpendAuthorizationState>();
    expectTypeOf<Extract<AutomationExecutionState, KnownAutomationExecutionState>>().toEqualTypeOf<KnownAutomationExecutionState>();
    expectTypeOf<Extract<PeriodKind, KnownPeriodKind>>().toEqualTypeOf<KnownPeriodKind>();
    expectTypeOf<Extract<Role, KnownRole>>().toEqualTypeOf<KnownRole>();
    expectTypeOf<"ROLE_AUDITOR">().toExtend<Role>();
  });
});
