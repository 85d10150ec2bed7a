// Money and field rules through HTTP: every bad input is 400 with the contract's error body at every
// operation that carries money or a limit, and nothing is stored; the exact bounds are accepted and
// come back exactly (no floats anywhere).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { amount, DAY, expectError, money, newAppId, startFundsServer, storedControls, type Funds, type Schemas, shown } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let subject: { userId: string; f: Funds };

beforeAll(async () => void ({ ts, admin, subject } = await startFundsServer()));
afterAll(async () => ts?.stop());

const future = () => new Date(ts.clock.now() + DAY).toISOString();

/** Bad Money values, each with the reason the server must give (undefined: any reason). */
const BAD_MONEY: [name: string, value: unknown, reason?: string][] = [
  ["negative units", money("-1")],
  ["units over the int64 bound (units * 10^9 > int64)", money("9223372037"), "MONEY_OUT_OF_RANGE"],
  ["the largest amount plus one nano", money("9223372036", 854_775_808), "MONEY_OUT_OF_RANGE"],
  ["units of the int64 maximum itself", money("9223372036854775807"), "MONEY_OUT_OF_RANGE"],
  ["units of 20 digits", money("10000000000000000000")],
  ["nanos of 10^9", money("1", 1_000_000_000)],
  ["negative nanos", money("1", -1)],
  ["fractional nanos", money("1", 1.5)],
  ["units as a number instead of a string", { currencyCode: "USD", units: 250, nanos: 0 }],
  ["nanos as a string instead of a number", { currencyCode: "USD", units: "250", nanos: "0" }],
  ["units with a decimal point", money("250.5")],
  ["units in exponent notation", money("1e3")],
  ["units with a sign", money("+250")],
  ["units with leading zeros", money("0250")],
  ["empty units", money("")],
  ["another currency than the fund's", money("250", 0, "EUR"), "CURRENCY_MISMATCH"],
  ["a lower-case currency code", money("250", 0, "usd")],
  ["no currency code", { units: "250", nanos: 0 }],
  ["no nanos", { currencyCode: "USD", units: "250" }],
  ["an extra field", { ...money("250"), scale: 2 }],
];

/** Bad SpendLimit values. */
const BAD_LIMITS: [name: string, value: unknown, reason?: string][] = [
  ["two arms: amount and blocked", { ...amount("1"), blocked: {} }],
  ["two arms: amount and unlimited", { ...amount("1"), unlimited: {} }],
  ["two arms: blocked and unlimited", { blocked: {}, unlimited: {} }],
  ["no arm", {}],
  ["an amount without money", { amount: {} }, "LIMIT_MONEY_MISSING"],
  ["an amount with null money", { amount: { money: null } }, "LIMIT_MONEY_MISSING"],
  ["blocked carrying a field", { blocked: { reason: "x" } }],
  ["a string instead of an object", "250"],
  ["a number instead of an object", 250],
];

/** Where money and limits are carried, each with how to read back that nothing was stored. */
interface Surface {
  name: string;
  /** Sends `limit` at this surface for a fresh app and answers the response and a readback. */
  send(limit: unknown, appId: string): Promise<{ response: Response; error?: unknown }>;
  stored(appId: string): Promise<unknown>;
}

const surfaces = (): Surface[] => [
  {
    name: "SubjectAppLimitService.SetLimit",
    send: (limit, appId) => admin.setLimit(subject.userId, appId, { limit, period: "PERIOD_KIND_MONTHLY" }),
    stored: (appId) => storedControls(admin, subject.userId, appId),
  },
  {
    name: "MyFundLimitsService.SetLimit",
    send: (limit, appId) => subject.f.mySetLimit(appId, { limit }),
    stored: async (appId) => {
      const r = await subject.f.myGet(appId);
      return r.response.status === 404 ? null : r.data;
    },
  },
  {
    name: "SubjectAppLimitService.SetExtension",
    send: (limit, appId) => admin.setExtension(subject.userId, appId, { limit, expiresAt: future() }),
    stored: (appId) => storedControls(admin, subject.userId, appId),
  },
  {
    name: "AppCapService.Set (controls.limit)",
    send: (limit, appId) => admin.capSet(appId, { controls: { limit } }),
    stored: async (appId) => {
      const r = await admin.capGet(appId);
      if (r.response.status === 404) expectError(r, 404, "APP_CAP_NOT_FOUND");
      return r.response.status === 404 ? null : r.data;
    },
  },
  {
    name: "AppCapService.Set (controls.extension.limit)",
    send: (limit, appId) => admin.capSet(appId, { controls: { limit: amount("1"), extension: { limit, expiresAt: future() } } }),
    stored: async (appId) => ((await admin.capGet(appId)).response.status === 404 ? null : "stored"),
  },
  {
    name: "FundPolicyService.Update (defaultControls.limit)",
    send: (limit) => admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: { limit } }, updateMask: "defaultControls" }),
    stored: async () => unwrap(await admin.policyGet()).fundPolicy.defaultControls,
  },
];

function expectBadRequest(r: { response: Response; error?: unknown }, reason?: string) {
  expectError(r as never, 400, reason);
  const details = (r.error as Schemas["Status"]).details;
  const bad = details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest") as Schemas["BadRequest"] | undefined;
  expect(bad?.fieldViolations.length).toBeGreaterThan(0);
}

describe("bad money is 400 with the contract's error body, and nothing is stored", () => {
  for (const surface of surfaces()) {
    describe(surface.name, () => {
      for (const [name, value, reason] of BAD_MONEY) {
        it(name, async () => {
          const appId = newAppId();
          const r = await surface.send({ amount: { money: value } }, appId);
          expectBadRequest(r, reason);
          expect(await surface.stored(appId)).toBeNull();
        });
      }
      for (const [name, value, reason] of BAD_LIMITS) {
        it(`limit with ${name}`, async () => {
          const appId = newAppId();
          const r = await surface.send(value, appId);
          expectBadRequest(r, reason);
          expect(await surface.stored(appId)).toBeNull();
        });
      }
    });
  }
});

describe("bad periods are 400, and nothing is stored", () => {
  it("a period alone, without a limit (SubjectAppLimitService.SetLimit, MyFundLimitsService.SetLimit)", async () => {
    const appId = newAppId();
    expectBadRequest(await admin.setLimit(subject.userId, appId, { period: "PERIOD_KIND_WEEKLY" }));
    expectBadRequest(await admin.setLimit(subject.userId, appId, { limit: null, period: "PERIOD_KIND_WEEKLY" }));
    expectBadRequest(await subject.f.mySetLimit(appId, { period: "PERIOD_KIND_WEEKLY" }));
    expect(await storedControls(admin, subject.userId, appId)).toBeNull();
  });

  it("a period alone in SpendControls (AppCapService.Set, FundPolicyService.Update)", async () => {
    const appId = newAppId();
    expectBadRequest(await admin.capSet(appId, { controls: { period: "PERIOD_KIND_WEEKLY" } }), "PERIOD_WITHOUT_LIMIT");
    expectBadRequest(await admin.capSet(appId, { controls: { limit: null, period: "PERIOD_KIND_WEEKLY", suspension: {} } }), "PERIOD_WITHOUT_LIMIT");
    expectError(await admin.capGet(appId), 404, "APP_CAP_NOT_FOUND");
    expectBadRequest(
      await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: { period: "PERIOD_KIND_WEEKLY" } }, updateMask: "defaultControls" }),
      "PERIOD_WITHOUT_LIMIT",
    );
    expect(unwrap(await admin.policyGet()).fundPolicy.defaultControls).toBeNull();
  });

  it("an unknown period value, or a period that is not a string", async () => {
    const appId = newAppId();
    for (const period of ["PERIOD_KIND_HOURLY", "monthly", "", 3]) {
      expectBadRequest(await admin.setLimit(subject.userId, appId, { limit: amount("1"), period }));
      expectBadRequest(await subject.f.mySetLimit(appId, { limit: amount("1"), period }));
      expectBadRequest(await admin.capSet(appId, { controls: { limit: amount("1"), period } }));
    }
    expect(await storedControls(admin, subject.userId, appId)).toBeNull();
    expectError(await admin.capGet(appId), 404, "APP_CAP_NOT_FOUND");
  });

  it("PERIOD_KIND_UNSPECIFIED with a limit is no period of its own", async () => {
    const appId = newAppId();
    const row = unwrap(await admin.setLimit(subject.userId, appId, { limit: amount("5"), period: "PERIOD_KIND_UNSPECIFIED" })).limit;
    expect(row.controls).toEqual(shown({ limit: amount("5") }));
  });
});

describe("a bad request leaves an existing row exactly as it was", () => {
  it("no field of the row changes, not even updatedAt", async () => {
    const appId = newAppId();
    const before = unwrap(await admin.setLimit(subject.userId, appId, { limit: amount("100"), period: "PERIOD_KIND_WEEKLY" })).limit;
    await admin.suspend(subject.userId, appId, { reason: "kept" });
    const suspended = unwrap(await admin.get(subject.userId, appId)).limit;
    ts.clock.advance(60_000);
    for (const [, value] of [...BAD_MONEY, ...BAD_LIMITS]) {
      const limit = BAD_LIMITS.some(([, v]) => v === value) ? value : { amount: { money: value } };
      expectError(await admin.setLimit(subject.userId, appId, { limit }), 400);
      expectError(await subject.f.mySetLimit(appId, { limit }), 400);
      expectError(await admin.setExtension(subject.userId, appId, { limit, expiresAt: future() }), 400);
    }
    expectError(await admin.setLimit(subject.userId, appId, { period: "PERIOD_KIND_DAILY" }), 400);
    expect(unwrap(await admin.get(subject.userId, appId)).limit).toEqual(suspended);
    expect(suspended.controls?.limit).toEqual(before.controls?.limit);
  });
});

describe("the bounds of Money are accepted exactly", () => {
  it("the largest amount (units 9223372036, nanos 854775807) is stored and resolved exactly", async () => {
    const appId = newAppId();
    const max = amount("9223372036", 854_775_807);
    expect(unwrap(await admin.setLimit(subject.userId, appId, { limit: max })).limit.controls).toEqual(shown({ limit: max }));
    expect(unwrap(await admin.get(subject.userId, appId)).limit.controls).toEqual(shown({ limit: max }));
    const effective = unwrap(await admin.effective(subject.userId, appId)).effective;
    expect(effective).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", limit: max });
  });

  it("the largest amount is accepted at every surface", async () => {
    const max = amount("9223372036", 854_775_807);
    const appId = newAppId();
    unwrap(await subject.f.mySetLimit(appId, { limit: max }));
    unwrap(await admin.setExtension(subject.userId, newAppId(), { limit: max, expiresAt: future() }));
    expect(unwrap(await admin.capSet(appId, { controls: { limit: max } })).appCap.controls).toEqual(shown({ limit: max }));
  });

  it("zero, nanos up to 999999999, and the largest nanos with smaller units", async () => {
    for (const [units, nanos] of [["0", 0], ["0", 999_999_999], ["9223372035", 999_999_999], ["9223372036", 0]] as const) {
      const appId = newAppId();
      const limit = amount(units, nanos);
      expect(unwrap(await admin.setLimit(subject.userId, appId, { limit })).limit.controls?.limit).toEqual(limit);
    }
  });

  it("units with 19 digits that are still within the bound are not confused with larger ones", async () => {
    // 9223372036854775807 nanos is the bound; one unit more than the largest whole amount is out.
    expectError(await admin.setLimit(subject.userId, newAppId(), { limit: amount("9223372037", 0) }), 400, "MONEY_OUT_OF_RANGE");
    unwrap(await admin.setLimit(subject.userId, newAppId(), { limit: amount("9223372036", 854_775_807) }));
  });
});

describe("other field rules", () => {
  it("unknown fields in a request body are refused", async () => {
    const appId = newAppId();
    expectBadRequest(await admin.setLimit(subject.userId, appId, { limit: amount("1"), note: "x" }));
    expectBadRequest(await admin.suspend(subject.userId, appId, { reason: "x", until: "tomorrow" }));
    expectBadRequest(await admin.capSet(appId, { controls: { limit: amount("1"), priority: 1 } }));
    expect(await storedControls(admin, subject.userId, appId)).toBeNull();
  });

  it("a reason over 500 characters is refused", async () => {
    const appId = newAppId();
    expectBadRequest(await admin.suspend(subject.userId, appId, { reason: "x".repeat(501) }));
    expectBadRequest(await admin.setExtension(subject.userId, appId, { limit: amount("1"), expiresAt: future(), reason: "x".repeat(501) }));
    expect(await storedControls(admin, subject.userId, appId)).toBeNull();
    unwrap(await admin.suspend(subject.userId, appId, { reason: "x".repeat(500) }));
  });

  it("an extension needs a valid expiresAt in the future", async () => {
    const appId = newAppId();
    const now = new Date(ts.clock.now()).toISOString();
    expectBadRequest(await admin.setExtension(subject.userId, appId, { limit: amount("1") }));
    expectBadRequest(await admin.setExtension(subject.userId, appId, { limit: amount("1"), expiresAt: "tomorrow" }));
    expectBadRequest(await admin.setExtension(subject.userId, appId, { limit: amount("1"), expiresAt: now }), "EXTENSION_EXPIRY_NOT_IN_FUTURE");
    expectBadRequest(await admin.setExtension(subject.userId, appId, { limit: amount("1"), expiresAt: "2020-01-01T00:00:00Z" }), "EXTENSION_EXPIRY_NOT_IN_FUTURE");
    expectBadRequest(await admin.setExtension(subject.userId, appId, { expiresAt: future() }));
    expect(await storedControls(admin, subject.userId, appId)).toBeNull();
  });

  it("path ids are validated for shape", async () => {
    const r = await ts.admin.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}", { params: { path: { user_id: subject.userId, app_id: "-bad" } } });
    expectError(r, 400);
    const s = await admin.search({ appIds: ["has space"] });
    expectError(s, 400);
  });
});
