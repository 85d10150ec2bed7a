// The cap on one authorization (SpendControls.perAuthorization) through HTTP: set at each scope,
// resolved by the same layering as the limit (the first layer stating one applies), held against by
// Authorize with its own cause and trace line, shown by GetEffective, read back and sent back as
// is, and refused when zero, negative or in another currency.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { DAY, expectError, iso, shown, UNLIMITED, type Funds } from "../limits/helpers.js";
import { amount, authorized, money, newAppId, spendServerForFile, type Spends } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let subject: { userId: string; f: Funds; s: Spends };

spendServerForFile((server) => void ({ ts, admin, spend, subject } = server));

const auth = (appId: string, units: string, extra: object = {}) => authorized(spend, { userId: subject.userId, appId, amount: money(units), ...extra });
const effective = async (appId: string) => unwrap(await admin.effective(subject.userId, appId)).effective;

describe("perAuthorization: the cap on one authorization", () => {
  it("on the subject-app row: an amount above it declines PER_AUTHORIZATION_EXCEEDED with its trace line, holding nothing; at the cap it approves", async () => {
    const app = newAppId("cap");
    const row = unwrap(await admin.setLimit(subject.userId, app, { limit: amount("100"), perAuthorization: money("30") })).limit;
    expect(row.controls).toEqual(shown({ limit: amount("100"), perAuthorization: money("30") }));
    const over = await auth(app, "30", { amount: money("30", 1) });
    expect(over).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_DECLINED", decision: { approved: false, cause: "SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED", scope: "SCOPE_SUBJECT_APP" } });
    expect(over.decision.trace).toEqual([
      "SCOPE_SUBJECT_APP: base limit USD 100 per PERIOD_KIND_MONTHLY by default -> limit",
      "SCOPE_SUBJECT_APP: per authorization USD 30 -> cap",
      "amount USD 30.000000001 > per authorization USD 30 -> decline",
    ]);
    expect(over.decision.usage).toMatchObject({ spent: money("0"), held: money("0"), remaining: money("100") });
    expect((await auth(app, "30")).decision).toMatchObject({ approved: true, usage: { held: money("30"), remaining: money("70") } });
    // The window still bounds the sum: 30 + 30 + 30 fit, a fourth 30 does not.
    await auth(app, "30");
    await auth(app, "30");
    expect((await auth(app, "30")).decision.cause).toBe("SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED");
    const shownEffective = await effective(app);
    expect(shownEffective.perAuthorization).toEqual(money("30"));
    expect(shownEffective.trace).toContain("SCOPE_SUBJECT_APP: per authorization USD 30 -> cap");
  });

  it("layers: the row's cap over the app cap's over the tenant default's; a layer without one falls through, whichever layer decides the limit", async () => {
    const app = newAppId("cap");
    unwrap(await admin.capSet(app, { controls: { limit: amount("1000"), perAuthorization: money("20") } }));
    // The row decides the limit and states no cap: the app cap's applies.
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("500") }));
    expect(await effective(app)).toMatchObject({ scope: "SCOPE_SUBJECT_APP", perAuthorization: money("20") });
    expect((await auth(app, "21")).decision).toMatchObject({ cause: "SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED", scope: "SCOPE_SUBJECT_APP" });
    expect((await auth(app, "21")).decision.trace).toContain("SCOPE_APP_CAP: per authorization USD 20 -> cap");
    // The row's own cap, higher, applies over the app cap's.
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("500"), perAuthorization: money("40") }));
    expect((await auth(app, "21")).decision.approved).toBe(true);
    expect((await auth(app, "41")).decision.cause).toBe("SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED");
    // SetLimit without the cap drops the row's own: the app cap's applies again.
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("500") }));
    expect((await effective(app)).perAuthorization).toEqual(money("20"));
    // The subject's own SetLimit keeps the cap an administrator set.
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("500"), perAuthorization: money("40") }));
    const mine = unwrap(await subject.f.mySetLimit(app, { limit: amount("300") })).limit;
    expect(mine.controls?.perAuthorization).toEqual(money("40"));
    // The subject's ClearLimit keeps it too: the row then states only a cap, and the app cap decides the limit.
    const cleared = unwrap(await subject.f.myClearLimit(app));
    expect(cleared.limit?.controls).toEqual(shown({ perAuthorization: money("40") }));
    expect(await effective(app)).toMatchObject({ scope: "SCOPE_APP_CAP", perAuthorization: money("40") });
  });

  it("an extension raises the total, never the cap; a suspension declines SUSPENDED first; unlimited is capped too", async () => {
    const app = newAppId("cap");
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("10"), perAuthorization: money("50") }));
    unwrap(await admin.setExtension(subject.userId, app, { limit: amount("200"), expiresAt: iso(ts.clock.now() + DAY), reason: "trip" }));
    expect((await auth(app, "50")).decision).toMatchObject({ approved: true });
    expect((await auth(app, "51")).decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED" });
    unwrap(await admin.suspend(subject.userId, app, { reason: "review" }));
    const suspended = await auth(app, "51");
    expect(suspended.decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_SUSPENDED" });
    expect(suspended.decision.trace.join("\n")).not.toContain("per authorization");
    expect((await effective(app)).perAuthorization).toBeNull();
    unwrap(await admin.unsuspend(subject.userId, app));
    expect((await effective(app)).perAuthorization).toEqual(money("50"));

    const unlimited = newAppId("cap");
    unwrap(await admin.setLimit(subject.userId, unlimited, { limit: UNLIMITED, perAuthorization: money("5") }));
    expect((await auth(unlimited, "5")).decision.approved).toBe(true);
    expect((await auth(unlimited, "6")).decision.cause).toBe("SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED");
  });

  it("app caps and the tenant default take it with their controls, answer it, and take their controls back as read", async () => {
    const app = newAppId("cap");
    const cap = unwrap(await admin.capSet(app, { controls: { perAuthorization: money("7", 500_000_000) } })).appCap;
    expect(cap.controls).toEqual(shown({ perAuthorization: money("7", 500_000_000) }));
    // A cap stating only perAuthorization is a control: the limit comes from the tenant default.
    const before = unwrap(await admin.policyGet()).fundPolicy;
    const updated = unwrap(await admin.policyUpdate({ fundPolicy: { ...before, defaultControls: { limit: amount("100"), perAuthorization: money("60") } } })).fundPolicy;
    expect(updated.defaultControls).toEqual(shown({ limit: amount("100"), perAuthorization: money("60") }));
    expect(await effective(app)).toMatchObject({ scope: "SCOPE_TENANT_DEFAULT", perAuthorization: money("7", 500_000_000) });
    expect((await auth(app, "8")).decision.cause).toBe("SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED");
    // Without the app cap, the tenant default's cap applies.
    unwrap(await admin.capDelete(app));
    expect((await effective(app)).perAuthorization).toEqual(money("60"));
    expect((await auth(app, "61")).decision.trace).toContain("SCOPE_TENANT_DEFAULT: per authorization USD 60 -> cap");
    // Read and sent back as is: nothing changes (updatedAt too).
    const again = unwrap(await admin.policyUpdate({ fundPolicy: updated })).fundPolicy;
    expect(again).toEqual(updated);
    const other = newAppId("cap");
    const set = unwrap(await admin.capSet(other, { controls: { limit: amount("9"), perAuthorization: money("3") } })).appCap;
    expect(unwrap(await admin.capSet(other, { controls: set.controls })).appCap).toEqual(set);
    unwrap(await admin.policyUpdate({ fundPolicy: { ...updated, defaultControls: null } }));
  });

  it("refuses a cap of zero, negative or in another currency, at every scope, storing nothing", async () => {
    const app = newAppId("cap");
    const policy = unwrap(await admin.policyGet()).fundPolicy;
    const cases: [unknown, string][] = [
      [money("0"), "PER_AUTHORIZATION_NOT_POSITIVE"],
      [money("-1"), "INVALID_ARGUMENT"],
      [money("5", 0, "EUR"), "CURRENCY_MISMATCH"],
    ];
    for (const [perAuthorization, reason] of cases) {
      expectError(await admin.setLimit(subject.userId, app, { limit: amount("10"), perAuthorization }), 400, reason);
      expectError(await admin.capSet(app, { controls: { perAuthorization } }), 400, reason);
      expectError(await admin.policyUpdate({ fundPolicy: { ...policy, defaultControls: { perAuthorization } } }), 400, reason);
    }
    expect((await admin.get(subject.userId, app)).response.status).toBe(404);
    expect((await admin.capGet(app)).response.status).toBe(404);
    expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(policy);
  });
});
