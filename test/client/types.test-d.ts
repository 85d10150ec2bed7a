// The client names what it knows and holds what it does not: `reason` and every extensible
// enumeration are the union of the contract's known values and any other string, so a partner gets
// completions and narrowing, and a value added to the contract later still type-checks: in the
// exported types, and in what the client's calls answer and send. Plain `string` would lose the
// names: `Extract<T, Known>` is then `never`, and these assertions fail. (expectTypeOf's equality
// does not tell `string` from `"A" | (string & {})`.)
import { describe, expectTypeOf, it } from "vitest";
import {
  ApiRequestError,
  errorReason,
  unwrap,
  type ApiClient,
  type paths,
  type AutomationExecutionState,
  type ErrorReason,
  type KnownAutomationExecutionState,
  type KnownErrorReason,
  type KnownLimitScope,
  type KnownPeriodKind,
  type KnownRole,
  type KnownSpendAuthorizationState,
  type PeriodKind,
  type Role,
  type SpendAuthorizationState,
} from "../../src/client/index.js";
import type { FetchOptions } from "../../src/client/fetch-types.js";

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

  // Never called: their types are what a partner's code gets from the calls.
  const authorize = async (api: ApiClient) =>
    unwrap(
      await api.POST("/api/v1/funds/spend-authorizations", {
        params: { header: { "Idempotency-Key": "k" } },
        body: { userId: "u", appId: "a", amount: { currencyCode: "USD", units: "1", nanos: 0 } },
      }),
    ).authorization;
  const execution = async (api: ApiClient) => (await api.GET("/api/v1/automation_executions/{id}", { params: { path: { id: "e" } } })).data;
  const authorizations = async (api: ApiClient) => (await api.GET("/api/v1/funds/spend-authorizations", { params: { query: { state: "SPEND_AUTHORIZATION_STATE_DISPUTED" } } })).error;
  type Authorization = Awaited<ReturnType<typeof authorize>>;
  type Execution = NonNullable<Awaited<ReturnType<typeof execution>>>["automationExecution"];
  type ListError = NonNullable<Awaited<ReturnType<typeof authorizations>>>;

  it("type the enumerations of what a call answers as their known values or any other", () => {
    expectTypeOf<Authorization["state"]>().toEqualTypeOf<SpendAuthorizationState>();
    expectTypeOf<Extract<Authorization["state"], KnownSpendAuthorizationState>>().toEqualTypeOf<KnownSpendAuthorizationState>();
    expectTypeOf<Extract<Authorization["decision"]["period"], KnownPeriodKind>>().toEqualTypeOf<KnownPeriodKind>();
    expectTypeOf<Extract<Authorization["decision"]["scope"], KnownLimitScope>>().toEqualTypeOf<KnownLimitScope>();
    expectTypeOf<Extract<Execution["state"], KnownAutomationExecutionState>>().toEqualTypeOf<KnownAutomationExecutionState>();
    type Info = Extract<ListError["details"][number], { reason: unknown }>;
    expectTypeOf<Extract<Info["reason"], KnownErrorReason>>().toEqualTypeOf<KnownErrorReason>();
    // Still strings (not openapi-fetch's object of String's methods): any string API takes them.
    expectTypeOf<Authorization["state"]>().toExtend<string>();
    expectTypeOf<Execution["state"]>().toExtend<string>();
    expectTypeOf<"SPEND_AUTHORIZATION_STATE_DISPUTED">().toExtend<Authorization["state"]>();
  });

  it("narrow an answer's enumeration by the known values a partner handles", () => {
    const describeState = (state: Authorization["state"]) => {
      // Comparing keeps `string & {}` beside the one known value (an unknown string could be equal), and
      // drops the others; past the branch, that value is gone.
      if (state === "SPEND_AUTHORIZATION_STATE_PENDING") {
        expectTypeOf<Extract<typeof state, KnownSpendAuthorizationState>>().toEqualTypeOf<"SPEND_AUTHORIZATION_STATE_PENDING">();
        return "held";
      }
      expectTypeOf<Extract<typeof state, "SPEND_AUTHORIZATION_STATE_PENDING">>().toBeNever();
      expectTypeOf<Extract<typeof state, "SPEND_AUTHORIZATION_STATE_CAPTURED">>().toEqualTypeOf<"SPEND_AUTHORIZATION_STATE_CAPTURED">();
      return state;
    };
    expectTypeOf(describeState).returns.toExtend<string>();
  });

  it("type the enumerations of what a call sends as their known values or any other", () => {
    type CreateUser = NonNullable<FetchOptions<paths["/api/v1/users"]["post"]>["body"]>;
    expectTypeOf<Extract<CreateUser["roles"][number], KnownRole>>().toEqualTypeOf<KnownRole>();
    expectTypeOf<CreateUser["roles"][number]>().toExtend<string>();
    const create = (api: ApiClient, role: string) =>
      api.POST("/api/v1/users", { body: { displayName: "d", email: "e@example.com", roles: ["ROLE_USER", "ROLE_AUDITOR", role] } });
    expectTypeOf(create).returns.resolves.toHaveProperty("response");
  });
});
