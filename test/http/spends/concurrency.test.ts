// Exactness of spend admission under concurrency, the core promise of issue 15: whatever the
// interleaving, every decision is one a serial order of the decisions gives, so never more is
// approved than the limit. 150 concurrent authorizations of 1.00 against 100.00 approve exactly
// 100 (holds, and direct spends); with captures, releases, reversals and expiring holds
// interleaved, no approved decision sees the window over its limit, the usage GetEffective
// answers is the sum over the authorizations' states, and the window then fills exactly.
// One server with a clock the test moves; instances.test.ts runs the same on three processes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { amount, funds, newAppId } from "../limits/helpers.js";
import { expectExactCount, expectExactDecision, expectSerialApprovals, expectUsageMatchesStates, fillExactly, NANOS, nanosOf, runMix, spends, usd, type Spends } from "./load-helpers.js";

const N = 150;
const LIMIT = 100n * NANOS;
const counts = reliabilitySuite("spends-concurrency", testDialect());
let ts: TestServer;
let s: Spends;
let userId: string;

beforeAll(async () => {
  ts = await startTestServer();
  s = spends(ts.admin);
  userId = (await ts.userClient(["ROLE_USER"])).userId;
});
afterAll(async () => ts?.stop());

/** A fresh app whose subject-app row caps the subject's spends at 100.00 a month. */
async function limitedApp(): Promise<string> {
  const appId = newAppId("spend");
  unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100"), period: "PERIOD_KIND_MONTHLY" }));
  return appId;
}

describe(`${N} concurrent authorizations of 1.00 against a limit of 100.00 (${testDialect()})`, () => {
  for (const capture of [false, true]) {
    it(`${capture ? "direct spends (capture: true)" : "holds"}: exactly 100 approved, each decision seeing a distinct usage 1..100; the window then spent + held = 100.00, remaining 0`, () =>
      counts.check(async () => {
        const appId = await limitedApp();
        const answers = await Promise.all(Array.from({ length: N }, () => s.authorize({ userId, appId, amount: usd(NANOS), ...(capture ? { capture } : {}) }).then(unwrap)));
        const decided = answers.map((a) => a.authorization);
        const approved = decided.filter((a) => a.decision.approved);
        expect(approved).toHaveLength(100);
        for (const a of decided) expectExactDecision(a, LIMIT);
        expectSerialApprovals(approved, NANOS, 100);
        for (const a of approved) expect(a.state).toBe(capture ? "SPEND_AUTHORIZATION_STATE_CAPTURED" : "SPEND_AUTHORIZATION_STATE_PENDING");
        for (const a of decided.filter((d) => !d.decision.approved)) expect(a.state).toBe("SPEND_AUTHORIZATION_STATE_DECLINED");

        const usage = await s.usage(userId, appId);
        expect([usage.spent, usage.held, usage.remaining]).toEqual(capture ? [usd(LIMIT), usd(0n), usd(0n)] : [usd(0n), usd(LIMIT), usd(0n)]);
        const { authorizations } = await expectUsageMatchesStates(s, userId, appId, LIMIT);
        expect(authorizations.map((a) => a.id).sort()).toEqual(decided.map((a) => a.id).sort());
      }), 120_000);
  }

  it(`${N} concurrent authorizations against a count of 100 a window (maxAuthorizations), holds and direct spends: exactly 100 approved, each seeing a distinct count; released holds give back exactly their places, a reversal none`, () =>
    counts.check(() => expectExactCount([s], ts.admin, userId)), 120_000);

  it("captures, releases, reversals and expiring holds interleaved with new authorizations: every decision exact, usage = the sum over the states, then the window fills exactly", () =>
    counts.check(async () => {
      const appId = await limitedApp();
      // Short holds (60 s) expire when the clock moves 61 s, while the second half arrives.
      const { decided, lateApprovals, followUps } = await runMix({ clients: [s], userId, appId, limit: LIMIT, seed: 15, count: 240, spreadMs: 600, shortHoldSeconds: 60, midway: { atMs: 300, run: () => ts.clock.advance(61_000) } });
      // The mix did what it is for: the limit was reached, headroom given back was taken again.
      expect(decided.filter((a) => !a.decision.approved).length, "declined").toBeGreaterThan(0);
      expect(lateApprovals, "approvals after the window was full").toBeGreaterThan(0);
      expect(followUps.get("release 200") ?? 0).toBeGreaterThan(0);
      expect(followUps.get("reverse 200") ?? 0).toBeGreaterThan(0);

      const { authorizations } = await expectUsageMatchesStates(s, userId, appId, LIMIT);
      expect(authorizations.map((a) => a.id).sort()).toEqual(decided.map((a) => a.id).sort());
      expect(authorizations.filter((a) => a.state === "SPEND_AUTHORIZATION_STATE_EXPIRED").length, "expired holds").toBeGreaterThan(0);
      const got = await Promise.all(authorizations.map((a) => s.get(a.id).then(unwrap)));
      expect(got.map((g) => g.authorization)).toEqual(authorizations);

      await fillExactly([s], userId, appId, LIMIT, N);
      await expectUsageMatchesStates(s, userId, appId, LIMIT);
    }), 120_000);
});
