// Spends keep the fund currency they were made in: while any authorization exists in it, the fund
// currency cannot change (409 CURRENCY_IN_USE), even once every limit is removed, because a window's
// sums and a later capture or reversal would mix two currencies.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { expectError } from "../limits/helpers.js";
import { appWithLimit, authorized, money, startSpendServer, type SpendServer } from "./helpers.js";

let server: SpendServer;
beforeAll(async () => {
  server = await startSpendServer();
});
afterAll(async () => server?.ts.stop());

describe("the fund currency and spends", () => {
  it("a currency change is refused while a spend authorization exists, and nothing changes", async () => {
    const { admin, spend, subject } = server;
    const change = () => admin.policyUpdate({ fundPolicy: { currencyCode: "GBP", defaultControls: null }, updateMask: "currencyCode" });
    // No limit and no spend: the currency may change, and back.
    unwrap(await change());
    unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: null }, updateMask: "currencyCode" }));

    const app = await appWithLimit(admin, subject.userId, "10");
    const a = await authorized(spend, { userId: subject.userId, appId: app, amount: money("3") });
    unwrap(await spend.release(a.id));
    unwrap(await admin.delete(subject.userId, app));
    const before = unwrap(await admin.policyGet()).fundPolicy;

    const refused = await change();
    expectError(refused, 409, "CURRENCY_IN_USE");
    expect((refused.error as { message: string }).message).toBe("the fund currency cannot change to GBP while spend authorizations hold amounts in another currency");
    expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(before);
  });
});
