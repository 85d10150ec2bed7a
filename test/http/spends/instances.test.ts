// Exactness of spend admission across three server processes on one database, as behind a load
// balancer: the instances share nothing but the database, so only the database's locking keeps
// two of them from approving against the same headroom. The requests of each test are spread
// over the three; holds expire by the real clock (holdSeconds 1).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { amount, funds, newAppId } from "../limits/helpers.js";
import { expectExactCount, expectExactDecision, expectSerialApprovals, expectUsageMatchesStates, fillExactly, NANOS, nanosOf, runMix, spends, usd, type Spends } from "./load-helpers.js";

const ADMIN = { clientId: "spend-admin", clientSecret: "spend-admin-secret-0123456789" };
const N = 150;
const LIMIT = 100n * NANOS;
const MIX_LIMIT = 60n * NANOS;
const counts = reliabilitySuite("spends-concurrency", `${testDialect()}, 3 instances`);

let cluster: Instances | undefined;
let s: Spends[] = [];
let userId: string;

beforeAll(async () => {
  // Rate limits off: 150 requests at once from one address is the point here.
  cluster = await startInstances(3, ADMIN, "http://tenant.example.test", { RATE_LIMIT: "off" });
  s = cluster.clients.map(spends);
  userId = unwrap(await cluster.clients[0]!.POST("/api/v1/users", { body: { displayName: "Spender", email: `spender-${Date.now()}@example.com`, roles: ["ROLE_USER"] } })).user.id!;
}, 120_000);
afterAll(async () => cluster?.stop(), 120_000);

/** A fresh app capping the subject's spends at `units` a month. */
async function limitedApp(units = "100"): Promise<string> {
  const appId = newAppId("spend");
  unwrap(await funds(cluster!.clients[1]!).setLimit(userId, appId, { limit: amount(units), period: "PERIOD_KIND_MONTHLY" }));
  return appId;
}

describe(`spend admission on three instances on one ${testDialect()} database`, () => {
  it(`${N} concurrent authorizations of 1.00 against 100.00, holds and direct spends, spread over the instances: exactly 100 approved`, () =>
    counts.check(async () => {
      const appId = await limitedApp();
      const answers = await Promise.all(Array.from({ length: N }, (_, i) => s[i % 3]!.authorize({ userId, appId, amount: usd(NANOS), ...(i % 2 ? { capture: true } : {}) }).then(unwrap)));
      const decided = answers.map((a) => a.authorization);
      const approved = decided.filter((a) => a.decision.approved);
      expect(approved).toHaveLength(100);
      for (const a of decided) expectExactDecision(a, LIMIT);
      expectSerialApprovals(approved, NANOS, 100);
      const usage = await s[2]!.usage(userId, appId);
      expect(nanosOf(usage.spent) + nanosOf(usage.held)).toBe(LIMIT);
      expect(usage.remaining).toEqual(usd(0n));
      await expectUsageMatchesStates(s[0]!, userId, appId, LIMIT);
    }), 120_000);

  it(`${N} concurrent authorizations against a count of 100 a window (maxAuthorizations), spread over the instances: exactly 100 approved; released holds give back exactly their places, a reversal none`, () =>
    counts.check(() => expectExactCount(s, cluster!.clients[0]!, userId)), 120_000);

  it("one Idempotency-Key sent 30 times at once, spread over the instances: one authorization, every answer it, all but one replayed", () =>
    counts.check(async () => {
      const appId = await limitedApp();
      const key = `race-${randomUUID()}`;
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => s[i % 3]!.authorize({ userId, appId, amount: usd(NANOS) }, key)));
      const first = answers.filter((a) => a.response.headers.get("idempotent-replayed") !== "true");
      expect(first).toHaveLength(1);
      for (const a of answers) expect(unwrap(a).authorization).toEqual(unwrap(first[0]!).authorization);
      expect(await s[1]!.all(userId, appId)).toHaveLength(1);
      expect((await s[2]!.usage(userId, appId)).held).toEqual(usd(NANOS));
    }), 120_000);

  it("Capture, Release and Reverse, each with one Idempotency-Key sent 30 times at once over the instances: one change each, every answer it, all but one replayed", () =>
    counts.check(async () => {
      const appId = await limitedApp();
      const [hold, toRelease] = [await s[0]!.authorize({ userId, appId, amount: usd(NANOS) }), await s[1]!.authorize({ userId, appId, amount: usd(NANOS) })].map((a) => unwrap(a).authorization);
      const spent = unwrap(await s[2]!.authorize({ userId, appId, amount: usd(2n * NANOS), capture: true })).authorization;
      const part = (NANOS * 4n) / 10n;
      const half = NANOS / 2n;
      const races = {
        capture: { key: `capture-${randomUUID()}`, send: (c: Spends, key: string) => c.capture(hold!.id, part, key) },
        release: { key: `release-${randomUUID()}`, send: (c: Spends, key: string) => c.release(toRelease!.id, key) },
        // Four reversals of 0.50 would fit in the 2.00 captured: only the key keeps it to one.
        reverse: { key: `reverse-${randomUUID()}`, send: (c: Spends, key: string) => c.reverse(spent.id, half, key) },
      };
      const answers = await Promise.all(
        Object.values(races).map(({ key, send }) => Promise.all(Array.from({ length: 30 }, (_, i) => send(s[i % 3]!, key)))),
      );
      for (const [i, name] of Object.keys(races).entries()) {
        const all = answers[i]!;
        const first = all.filter((a) => a.response.headers.get("idempotent-replayed") !== "true");
        expect(first, name).toHaveLength(1);
        for (const a of all) expect(unwrap(a).authorization, name).toEqual(unwrap(first[0]!).authorization);
      }
      const byId = new Map((await s[1]!.all(userId, appId)).map((a) => [a.id, a]));
      expect(byId.get(hold!.id)).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", capturedAmount: usd(part) });
      expect(byId.get(toRelease!.id)).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_RELEASED" });
      expect(byId.get(spent.id)).toMatchObject({ capturedAmount: usd(2n * NANOS), reversedAmount: usd(half) });
      const usage = await s[2]!.usage(userId, appId);
      expect(usage).toMatchObject({ spent: usd(part + 2n * NANOS - half), held: usd(0n) });
      await expectUsageMatchesStates(s[0]!, userId, appId, LIMIT);
    }), 120_000);

  // On PostgreSQL an instance decides a subject and app's next spend on what its last decision of
  // them saw (one round trip); what changed since, on another instance, must decide it all the same.
  it("an instance's next decision of a subject and app follows what another changed since its last: the limit, a spend, a suspension, the cap and the row's removal", () =>
    counts.check(async () => {
      const appId = await limitedApp("10");
      const admin = funds(cluster!.clients[1]!);
      const decide = async (i: number, nanos: bigint) => unwrap(await s[i]!.authorize({ userId, appId, amount: usd(nanos) })).authorization.decision;
      expect((await decide(0, 4n * NANOS)).approved).toBe(true);
      unwrap(await admin.setLimit(userId, appId, { limit: amount("5"), period: "PERIOD_KIND_MONTHLY" }));
      expect(await decide(0, 2n * NANOS)).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED" });
      // Another instance's spend fills the window: instance 0 saw 4.00 of 5.00 used.
      expect((await decide(2, NANOS)).approved).toBe(true);
      expect(await decide(0, NANOS / 2n)).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED", usage: { held: usd(5n * NANOS) } });
      unwrap(await admin.setLimit(userId, appId, { limit: amount("50"), period: "PERIOD_KIND_MONTHLY" }));
      expect((await decide(0, NANOS)).approved).toBe(true);
      unwrap(await admin.suspend(userId, appId, { reason: "card reported lost" }));
      expect(await decide(0, NANOS)).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_SUSPENDED" });
      unwrap(await admin.unsuspend(userId, appId));
      expect((await decide(0, NANOS)).approved).toBe(true);
      // 7.00 used. A cap of the app, then the subject-app row removed: the cap decides (the first layer with an opinion).
      unwrap(await admin.capSet(appId, { controls: { limit: amount("8"), period: "PERIOD_KIND_MONTHLY" } }));
      unwrap(await admin.delete(userId, appId));
      expect(await decide(0, NANOS)).toMatchObject({ approved: true, scope: "SCOPE_APP_CAP" });
      expect(await decide(0, NANOS / 100n)).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED", scope: "SCOPE_APP_CAP" });
      unwrap(await admin.capSet(appId, { controls: { limit: amount("9"), period: "PERIOD_KIND_MONTHLY" } }));
      expect(await decide(0, NANOS)).toMatchObject({ approved: true, scope: "SCOPE_APP_CAP" });
      await expectUsageMatchesStates(s[1]!, userId, appId, 9n * NANOS);
    }), 120_000);

  it("captures, releases, reversals and holds expiring by the clock, interleaved across the instances: every decision exact, usage = the sum over the states, then the window fills exactly", () =>
    counts.check(async () => {
      // 60.00: the first half's 75 authorizations (about 97.00 asked) fill it whatever is released meanwhile.
      const appId = await limitedApp("60");
      // Each half arrives over 1.5 s; short holds of 1 s expire while later ones arrive.
      const { decided, lateApprovals, followUps } = await runMix({ clients: s, userId, appId, limit: MIX_LIMIT, seed: 1503, count: 150, spreadMs: 1500, shortHoldSeconds: 1 });
      expect(decided.filter((a) => !a.decision.approved).length, "declined").toBeGreaterThan(0);
      expect(lateApprovals, "approvals after the window was full").toBeGreaterThan(0);
      expect(followUps.get("release 200") ?? 0).toBeGreaterThan(0);
      expect(followUps.get("reverse 200") ?? 0).toBeGreaterThan(0);
      // Past every short hold's expiry.
      await new Promise((r) => setTimeout(r, 1100));
      const { authorizations } = await expectUsageMatchesStates(s[1]!, userId, appId, MIX_LIMIT);
      expect(authorizations.map((a) => a.id).sort()).toEqual(decided.map((a) => a.id).sort());
      expect(authorizations.filter((a) => a.state === "SPEND_AUTHORIZATION_STATE_EXPIRED").length, "expired holds").toBeGreaterThan(0);
      await fillExactly(s, userId, appId, MIX_LIMIT, N);
      await expectUsageMatchesStates(s[2]!, userId, appId, MIX_LIMIT);
    }), 120_000);

  it(`${N} concurrent authorizations of 1.00 against 100.00 over the instances while the period and the time zone flip: exactly 100 approved, every window holding all 100`, () =>
    counts.check(async () => {
      const appId = await limitedApp();
      const admins = cluster!.clients.map(funds);
      const periods = ["PERIOD_KIND_WEEKLY", "PERIOD_KIND_MONTHLY"];
      const zones = ["Asia/Tokyo", "UTC"];
      const setPeriod = (f: (typeof admins)[number], period: string) => f.setLimit(userId, appId, { limit: amount("100"), period }).then(unwrap);
      const setZone = (f: (typeof admins)[number], timeZone: string) => f.policyUpdate({ fundPolicy: { currencyCode: "USD", timeZone, defaultControls: null }, updateMask: "timeZone" }).then(unwrap);
      const answers = await Promise.all([
        ...Array.from({ length: N }, (_, i) => s[i % 3]!.authorize({ userId, appId, amount: usd(NANOS) }).then(unwrap)),
        ...Array.from({ length: 10 }, (_, i) => setPeriod(admins[i % 3]!, periods[i % 2]!).then(() => undefined)),
        ...Array.from({ length: 10 }, (_, i) => setZone(admins[(i + 1) % 3]!, zones[i % 2]!).then(() => undefined)),
      ]);
      const approved = answers.flatMap((a) => (a?.authorization.decision.approved ? [a.authorization] : []));
      expect(approved).toHaveLength(100);
      expectSerialApprovals(approved, NANOS, 100);
      // Read on the instance that made the change: its kept policy is the new one at once.
      for (const zone of zones) {
        await setZone(admins[0]!, zone);
        for (const period of periods) {
          await setPeriod(admins[0]!, period);
          expect(await s[0]!.usage(userId, appId), `${zone} ${period}`).toMatchObject({ spent: usd(0n), held: usd(LIMIT), remaining: usd(0n) });
        }
      }
      await setPeriod(admins[0]!, "PERIOD_KIND_MONTHLY");
    }), 120_000);
});
