// The count of authorizations per window (SpendControls.maxAuthorizations) through HTTP: set at each
// scope and resolved by the limit's layering (the first layer stating one applies), held against by
// Authorize with its own cause and trace line; what the window counts (a pending unexpired hold, a
// capture, reversed or not) and what it does not (a release, an expiry, a decline); a new window
// counts from nothing; GetEffective and Simulate show the count used and left; refused out of range.
// Exactness under concurrency: concurrency.test.ts and instances.test.ts (expectExactCount).
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
const usage = async (appId: string) => unwrap(await admin.effective(subject.userId, appId)).effective.usage;
const counted = (authorizations: string, maxAuthorizations: number | null, authorizationsRemaining: number | null) => ({ authorizations, maxAuthorizations, authorizationsRemaining });

/** A fresh app whose subject-app row allows USD 100 a month and `max` authorizations a window. */
async function countedApp(max: number, extra: object = {}): Promise<string> {
  const app = newAppId("count");
  unwrap(await admin.setLimit(subject.userId, app, { limit: amount("100"), maxAuthorizations: max, ...extra }));
  return app;
}

describe("maxAuthorizations: the count of authorizations per window", () => {
  it("on the subject-app row: the next authorization past it declines MAX_AUTHORIZATIONS_REACHED with its trace line, counting and holding nothing", async () => {
    const app = await countedApp(2);
    expect(unwrap(await admin.get(subject.userId, app)).limit.controls).toEqual(shown({ limit: amount("100"), maxAuthorizations: 2 }));
    expect((await auth(app, "1")).decision.usage).toMatchObject(counted("1", 2, 1));
    expect((await auth(app, "1", { capture: true })).decision.usage).toMatchObject(counted("2", 2, 0));
    const over = await auth(app, "1");
    expect(over).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_DECLINED", decision: { approved: false, cause: "SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED", scope: "SCOPE_SUBJECT_APP" } });
    const window = `window ${over.decision.usage.windowStart}..${over.decision.usage.windowEnd}`;
    expect(over.decision.trace).toEqual([
      "SCOPE_SUBJECT_APP: base limit USD 100 per PERIOD_KIND_MONTHLY by default -> limit",
      "SCOPE_SUBJECT_APP: at most 2 authorizations per window -> count",
      `${window}: authorizations 2 + 1 > 2 -> decline`,
    ]);
    expect(over.decision.usage).toMatchObject({ spent: money("1"), held: money("1"), remaining: money("98"), ...counted("2", 2, 0) });
    const effective = unwrap(await admin.effective(subject.userId, app)).effective;
    expect(effective).toMatchObject({ maxAuthorizations: 2, usage: counted("2", 2, 0) });
    expect(effective.trace).toContain("SCOPE_SUBJECT_APP: at most 2 authorizations per window -> count");
  });

  it("a release and an expiry give a place back; a capture keeps it, and a reversal, even of all of it, does not give it back", async () => {
    const app = await countedApp(3);
    const released = await auth(app, "1");
    const expiring = await auth(app, "1", { holdSeconds: 60 });
    const captured = await auth(app, "1");
    expect((await auth(app, "1")).decision.cause).toBe("SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED");
    unwrap(await spend.release(released.id));
    expect(await usage(app)).toMatchObject(counted("2", 3, 1));
    unwrap(await spend.capture(captured.id, { amount: money("0", 500_000_000) }));
    unwrap(await spend.reverse(captured.id));
    expect(await usage(app)).toMatchObject({ spent: money("0"), ...counted("2", 3, 1) });
    ts.clock.advance(61_000);
    let moved = 61_000;
    try {
      expect(await usage(app)).toMatchObject(counted("1", 3, 2));
      expect((await spend.get(expiring.id)).data?.authorization.state).toBe("SPEND_AUTHORIZATION_STATE_EXPIRED");
      expect((await auth(app, "1")).decision.approved).toBe(true);
      expect((await auth(app, "1")).decision.approved).toBe(true);
      expect((await auth(app, "1")).decision.cause).toBe("SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED");
      // Back before the expiry the hold counts again: the count follows the clock both ways.
      ts.clock.advance(-61_000);
      moved = 0;
      expect(await usage(app)).toMatchObject(counted("4", 3, 0));
    } finally {
      ts.clock.advance(-moved);
    }
  });

  it("a decline of any cause is not counted; a new window counts from nothing", async () => {
    const app = await countedApp(2, { perAuthorization: money("60") });
    expect((await auth(app, "61")).decision.cause).toBe("SPEND_DECLINE_CAUSE_PER_AUTHORIZATION_EXCEEDED");
    expect((await auth(app, "60")).decision.usage).toMatchObject(counted("1", 2, 1));
    expect((await auth(app, "50")).decision.cause).toBe("SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED");
    expect(await usage(app)).toMatchObject(counted("1", 2, 1));
    expect((await auth(app, "1")).decision.usage).toMatchObject(counted("2", 2, 0));
    const daily = newAppId("count");
    unwrap(await admin.setLimit(subject.userId, daily, { limit: amount("100"), period: "PERIOD_KIND_DAILY", maxAuthorizations: 1 }));
    await auth(daily, "1", { capture: true });
    expect((await auth(daily, "1")).decision.cause).toBe("SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED");
    ts.clock.advance(DAY);
    try {
      expect(await usage(daily)).toMatchObject({ spent: money("0"), ...counted("0", 1, 1) });
      expect((await auth(daily, "1")).decision.approved).toBe(true);
    } finally {
      ts.clock.advance(-DAY);
    }
  });

  it("layers: the row's count over the app cap's over the tenant default's, whichever layer decides the limit; none under a deny; unlimited is counted too", async () => {
    const app = newAppId("count");
    unwrap(await admin.capSet(app, { controls: { limit: amount("1000"), maxAuthorizations: 1 } }));
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("500") }));
    expect(unwrap(await admin.effective(subject.userId, app)).effective).toMatchObject({ scope: "SCOPE_SUBJECT_APP", maxAuthorizations: 1 });
    await auth(app, "1");
    expect((await auth(app, "1")).decision.trace).toContain("SCOPE_APP_CAP: at most 1 authorizations per window -> count");
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("500"), maxAuthorizations: 2 }));
    expect((await auth(app, "1")).decision.approved).toBe(true);
    // The subject's own SetLimit keeps the count an administrator set.
    expect(unwrap(await subject.f.mySetLimit(app, { limit: amount("300") })).limit.controls?.maxAuthorizations).toBe(2);
    unwrap(await admin.capDelete(app));
    // The subject's ClearLimit keeps it too: the row then states only its count.
    expect(unwrap(await subject.f.myClearLimit(app)).limit?.controls).toEqual(shown({ maxAuthorizations: 2 }));
    const before = unwrap(await admin.policyGet()).fundPolicy;
    try {
      const updated = unwrap(await admin.policyUpdate({ fundPolicy: { ...before, defaultControls: { limit: UNLIMITED, maxAuthorizations: 5 } } })).fundPolicy;
      expect(updated.defaultControls).toEqual(shown({ limit: UNLIMITED, maxAuthorizations: 5 }));
      // The row states only its count now (2): it applies over the default's 5, under the default's unlimited.
      expect(unwrap(await admin.effective(subject.userId, app)).effective).toMatchObject({ scope: "SCOPE_TENANT_DEFAULT", maxAuthorizations: 2, usage: counted("2", 2, 0) });
      expect((await auth(app, "1")).decision.cause).toBe("SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED");
      const fresh = newAppId("count");
      for (let i = 0; i < 5; i++) await auth(fresh, "1000");
      expect((await auth(fresh, "1")).decision).toMatchObject({ cause: "SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED", usage: { limit: null, remaining: null, ...counted("5", 5, 0) } });
      unwrap(await admin.suspend(subject.userId, fresh, { reason: "review" }));
      expect(unwrap(await admin.effective(subject.userId, fresh)).effective).toMatchObject({ maxAuthorizations: null, usage: counted("5", null, null) });
      // Read and sent back as is: nothing changes.
      expect(unwrap(await admin.policyUpdate({ fundPolicy: updated })).fundPolicy).toEqual(updated);
    } finally {
      unwrap(await admin.policyUpdate({ fundPolicy: { ...unwrap(await admin.policyGet()).fundPolicy, defaultControls: before.defaultControls } }));
    }
  });

  it("Simulate answers the count's decline and the count now, writing nothing", async () => {
    const app = await countedApp(1);
    await auth(app, "1");
    const sim = unwrap(await spend.simulate({ userId: subject.userId, appId: app, amount: money("1") }));
    expect(sim.decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED", usage: counted("1", 1, 0) });
    expect(sim.usage).toMatchObject(counted("1", 1, 0));
    expect(await usage(app)).toMatchObject(counted("1", 1, 0));
  });

  it("refuses a count of zero, negative, fractional, a string or above 1000000, at every scope, storing nothing", async () => {
    const app = newAppId("count");
    const policy = unwrap(await admin.policyGet()).fundPolicy;
    for (const maxAuthorizations of [0, -1, 1.5, "3", 1_000_001]) {
      expectError(await admin.setLimit(subject.userId, app, { limit: amount("10"), maxAuthorizations }), 400, "INVALID_ARGUMENT");
      expectError(await admin.capSet(app, { controls: { maxAuthorizations } }), 400, "INVALID_ARGUMENT");
      expectError(await admin.policyUpdate({ fundPolicy: { ...policy, defaultControls: { maxAuthorizations } } }), 400, "INVALID_ARGUMENT");
    }
    expect((await admin.get(subject.userId, app)).response.status).toBe(404);
    expect((await admin.capGet(app)).response.status).toBe(404);
    expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(policy);
    // The largest count is taken.
    expect(unwrap(await admin.capSet(app, { controls: { maxAuthorizations: 1_000_000 } })).appCap.controls?.maxAuthorizations).toBe(1_000_000);
  });
});
