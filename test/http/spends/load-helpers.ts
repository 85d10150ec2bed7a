// Shared by the spend exactness suites (one server with a clock the test moves, and three server
// processes on one database): spend calls over the typed client, exact money in BigInt nanos, the
// check that every decision was one a serial order gives, and the accounting recomputed from the
// authorizations' states.
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { funds, type Schemas } from "../limits/helpers.js";
import { spends as spendCalls, type Authorization } from "./helpers.js";
import { seeded } from "../../support/seeded.js";

export { seeded };

export type { Authorization };
type Money = Schemas["Money"];

export const NANOS = 1_000_000_000n;

/** The exact nanos of a Money. */
export const nanosOf = (m: Money): bigint => BigInt(m.units) * NANOS + BigInt(m.nanos);

/** A USD Money of exactly `nanos`. */
export const usd = (nanos: bigint): Money => ({ currencyCode: "USD", units: String(nanos / NANOS), nanos: Number(nanos % NANOS) });

/**
 * The spend calls of helpers.ts with amounts in nanos, plus every authorization of a window's
 * subject and app and the usage GetEffective answers.
 */
export function spends(client: ApiClient) {
  const calls = spendCalls(client);
  const amountBody = (amount?: bigint) => (amount === undefined ? {} : { amount: usd(amount) });
  return {
    authorize: (body: { userId: string; appId: string; amount: Money; holdSeconds?: number; capture?: boolean; metadata?: Record<string, string> }, key?: string) => calls.authorize(body, key),
    /** `key`: the request's Idempotency-Key; none when absent. */
    capture: (authorizationId: string, amount?: bigint, key?: string) => calls.capture(authorizationId, amountBody(amount), key ?? null),
    release: (authorizationId: string, key?: string) => calls.release(authorizationId, {}, key ?? null),
    reverse: (authorizationId: string, amount?: bigint, key?: string) => calls.reverse(authorizationId, amountBody(amount), key ?? null),
    get: calls.get,
    /** Every authorization of the subject and app, through every page. */
    async all(userId: string, appId: string): Promise<Authorization[]> {
      const out: Authorization[] = [];
      let page_token = "";
      do {
        const page = unwrap(await calls.list({ user_id: userId, app_id: appId, page_size: 100, ...(page_token ? { page_token } : {}) }));
        out.push(...page.list.map((v) => v.authorization));
        page_token = page.nextPageToken;
      } while (page_token);
      return out;
    },
    /** The usage of the current window, as the administrator's GetEffective answers it. */
    async usage(userId: string, appId: string): Promise<Schemas["SpendUsage"]> {
      return unwrap(await client.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/effective", { params: { path: { user_id: userId, app_id: appId } } })).effective.usage;
    },
  };
}

export type Spends = ReturnType<typeof spends>;

/**
 * The decision is one a serial order of decisions gives against `limit`: an approved spend's usage
 * (just after it, its own amount included) is within the limit; a declined one's usage plus its
 * amount is over it. Answers the usage spent + held the decision reports.
 */
/** Concurrent approvals were decided one after another: the k-th saw k units used (its own included), each k once. */
export function expectSerialApprovals(approved: readonly Authorization[], unit: bigint, count: number): void {
  const seen = approved.map((a) => Number((nanosOf(a.decision.usage.spent) + nanosOf(a.decision.usage.held)) / unit)).sort((a, b) => a - b);
  expect(seen).toEqual(Array.from({ length: count }, (_, k) => k + 1));
}

export function expectExactDecision(a: Authorization, limit: bigint): bigint {
  const usage = a.decision.usage;
  const used = nanosOf(usage.spent) + nanosOf(usage.held);
  expect(usage.limit && nanosOf(usage.limit), `authorization ${a.id}: the decision's limit`).toBe(limit);
  if (a.decision.approved) {
    expect(used, `approved ${a.id} with spent + held over the limit: ${JSON.stringify(usage)}`).toBeLessThanOrEqual(limit);
    expect(nanosOf(usage.remaining!)).toBe(limit - used);
  } else {
    expect(a.decision.cause, `declined ${a.id}`).toBe("SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED");
    expect(used + nanosOf(a.amount), `declined ${a.id} though it fitted: ${JSON.stringify(usage)}`).toBeGreaterThan(limit);
  }
  return used;
}

/**
 * spent, held and the count of a window, recomputed from its authorizations as answered now (an
 * expired hold is EXPIRED): the count is its pending and captured ones, reversed or not.
 */
export function accountOf(authorizations: readonly Authorization[]): { spent: bigint; held: bigint; count: number } {
  let spent = 0n;
  let held = 0n;
  let count = 0;
  for (const a of authorizations) {
    spent += nanosOf(a.capturedAmount) - nanosOf(a.reversedAmount);
    if (a.state === "SPEND_AUTHORIZATION_STATE_PENDING") held += nanosOf(a.amount);
    if (a.state === "SPEND_AUTHORIZATION_STATE_PENDING" || a.state === "SPEND_AUTHORIZATION_STATE_CAPTURED") count++;
  }
  return { spent, held, count };
}

/** The usage GetEffective answers equals the sums and the count over the authorizations, and is within `limit`. */
export async function expectUsageMatchesStates(s: Spends, userId: string, appId: string, limit: bigint): Promise<{ spent: bigint; held: bigint; authorizations: Authorization[] }> {
  const authorizations = await s.all(userId, appId);
  const usage = await s.usage(userId, appId);
  const { spent, held, count } = accountOf(authorizations);
  expect({ spent: nanosOf(usage.spent), held: nanosOf(usage.held), count: usage.authorizations }).toEqual({ spent, held, count: String(count) });
  expect(spent + held).toBeLessThanOrEqual(limit);
  expect(usage.remaining && nanosOf(usage.remaining)).toBe(limit - spent - held);
  return { spent, held, authorizations };
}


export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface MixOptions {
  /** Clients the requests are spread over, round robin (one per server instance). */
  clients: readonly Spends[];
  userId: string;
  appId: string;
  limit: bigint;
  seed: number;
  /**
   * Authorizations sent, in two halves: the second starts once the first is decided (the window
   * full by then), while the first's follow-ups run; each starts after a random delay within `spreadMs`.
   */
  count: number;
  spreadMs: number;
  /** holdSeconds of the short holds, which expire while the mix runs. */
  shortHoldSeconds: number;
  /** Called once, `atMs` after the second half starts: e.g. moves the test clock past the short holds. */
  midway?: { atMs: number; run: () => void | Promise<void> };
}

export interface MixOutcome {
  decided: Authorization[];
  /** Approvals of the second half: headroom given back (released, reversed, expired) taken again. */
  lateApprovals: number;
  /** What each follow-up was answered, e.g. "capture 200", "release 409 AUTHORIZATION_NOT_PENDING". */
  followUps: Map<string, number>;
}

type Plan = { delay: number; kind: "hold" | "short" | "direct"; amount: bigint; then: "capture" | "capture-part" | "release" | "keep"; reverse: "none" | "whole" | "part" };

/**
 * Holds, short holds and direct spends (capture: true) of 1.00 or 2.50, arriving spread over
 * `spreadMs`, each approved one followed at once by a capture (whole or part), a release, nothing,
 * and for captured ones a reversal (whole or part): releases and reversals give headroom back while
 * new authorizations arrive, and the short holds expire mid-way. Every decision is checked to be
 * one a serial order gives (expectExactDecision); every follow-up answer to be a valid one.
 */
export async function runMix(o: MixOptions): Promise<MixOutcome> {
  const rng = seeded(o.seed);
  const pick = <T>(options: readonly T[]): T => options[Math.floor(rng() * options.length)]!;
  const plans: Plan[] = Array.from({ length: o.count }, () => ({
    delay: Math.floor(rng() * o.spreadMs),
    kind: pick(["hold", "hold", "hold", "short", "short", "direct", "direct"] as const),
    amount: rng() < 0.8 ? NANOS : (5n * NANOS) / 2n,
    then: pick(["capture", "capture-part", "release", "release", "keep"] as const),
    reverse: pick(["none", "whole", "part"] as const),
  }));
  const decided: Authorization[] = [];
  const followUps = new Map<string, number>();
  const note = (what: string, answer: { response: Response; error?: unknown }) => {
    const reason = answer.response.status === 200 ? "" : ` ${(answer.error as { details?: { reason?: string }[] }).details?.find((d) => d.reason)?.reason}`;
    const key = `${what} ${answer.response.status}${reason}`;
    followUps.set(key, (followUps.get(key) ?? 0) + 1);
  };
  const reverse = async (s: Spends, a: Authorization, how: Plan["reverse"]) => {
    if (how === "none") return;
    const captured = nanosOf(a.capturedAmount);
    const answer = await s.reverse(a.id, how === "whole" ? undefined : captured / 4n);
    note("reverse", answer);
    expect(answer.response.status, `reverse of ${a.id}`).toBe(200);
  };
  const half = Math.ceil(plans.length / 2);
  let undecided = half;
  let secondHalf!: () => void;
  const firstDecided = new Promise<void>((resolve) => (secondHalf = resolve));
  let lateApprovals = 0;
  const midway = o.midway ? firstDecided.then(() => sleep(o.midway!.atMs)).then(o.midway.run) : Promise.resolve();
  await Promise.all([
    midway,
    ...plans.map(async (plan, i) => {
      const s = o.clients[i % o.clients.length]!;
      if (i >= half) await firstDecided;
      await sleep(plan.delay);
      const a = unwrap(
        await s.authorize({
          userId: o.userId,
          appId: o.appId,
          amount: usd(plan.amount),
          ...(plan.kind === "direct" ? { capture: true } : { holdSeconds: plan.kind === "short" ? o.shortHoldSeconds : 3600 }),
          metadata: { plan: String(i) },
        }),
      ).authorization;
      decided.push(a);
      if (i < half && --undecided === 0) secondHalf();
      expectExactDecision(a, o.limit);
      if (!a.decision.approved) return;
      if (i >= half) lateApprovals++;
      if (plan.kind === "direct") {
        expect(a.state).toBe("SPEND_AUTHORIZATION_STATE_CAPTURED");
        return reverse(s, a, plan.reverse);
      }
      expect(a.state).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
      if (plan.then === "keep") return;
      const other = o.clients[(i + 1) % o.clients.length]!;
      const answer = plan.then === "release" ? await other.release(a.id) : await other.capture(a.id, plan.then === "capture" ? undefined : plan.amount / 2n);
      note(plan.then, answer);
      // Only a short hold may have expired before its follow-up; anything else must succeed.
      if (answer.response.status !== 200 && plan.kind === "short") {
        expect([answer.response.status, (answer.error as { details: { reason?: string }[] }).details.find((d) => d.reason)?.reason]).toEqual([409, "AUTHORIZATION_NOT_PENDING"]);
        return;
      }
      expect(answer.response.status, `${plan.then} of ${a.id}: ${JSON.stringify(answer.error)}`).toBe(200);
      if (plan.then !== "release") await reverse(s, unwrap(answer).authorization, plan.reverse);
    }),
  ]);
  return { decided, lateApprovals, followUps };
}

/**
 * `n` concurrent authorizations of 1.00 (spread over the clients) after which the window is full:
 * exactly as many are approved as whole units remain. Answers the approved ones.
 */
export async function fillExactly(clients: readonly Spends[], userId: string, appId: string, limit: bigint, n: number, capture = false): Promise<Authorization[]> {
  const before = await clients[0]!.usage(userId, appId);
  const room = (limit - nanosOf(before.spent) - nanosOf(before.held)) / NANOS;
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => clients[i % clients.length]!.authorize({ userId, appId, amount: usd(NANOS), ...(capture ? { capture } : {}) }).then(unwrap)));
  const decided = answers.map((a) => a.authorization);
  for (const a of decided) expectExactDecision(a, limit);
  const approved = decided.filter((a) => a.decision.approved);
  expect(approved.length).toBe(Number(room));
  return approved;
}

/**
 * The count per window under concurrency (SpendControls.maxAuthorizations), the requests spread
 * over `clients`: with a count of 100 and room in the amount for all, 150 authorizations at once
 * (half of them captured at once) approve exactly 100, each seeing a distinct count 1..100, the
 * rest declined MAX_AUTHORIZATIONS_REACHED at 100; 10 holds released give back exactly 10 places
 * to 20 more at once; a reversal gives back none; GetEffective counts what the states say.
 */
export async function expectExactCount(clients: readonly Spends[], admin: ApiClient, userId: string): Promise<void> {
  const appId = `spend-count-${randomUUID()}`;
  unwrap(await funds(admin).setLimit(userId, appId, { limit: { amount: { money: usd(1000n * NANOS) } }, maxAuthorizations: 100 }));
  const at = (i: number) => clients[i % clients.length]!;
  const burst = (n: number, capture: (i: number) => boolean) =>
    Promise.all(Array.from({ length: n }, (_, i) => at(i).authorize({ userId, appId, amount: usd(NANOS), ...(capture(i) ? { capture: true } : {}) }).then((a) => unwrap(a).authorization)));
  const decided = await burst(150, (i) => i % 2 === 1);
  const approved = decided.filter((a) => a.decision.approved);
  expect(approved).toHaveLength(100);
  expect(approved.map((a) => Number(a.decision.usage.authorizations)).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, k) => k + 1));
  for (const a of decided.filter((d) => !d.decision.approved)) {
    expect(a.decision).toMatchObject({ cause: "SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED", usage: { authorizations: "100", maxAuthorizations: 100, authorizationsRemaining: 0 } });
  }
  const holds = approved.filter((a) => a.state === "SPEND_AUTHORIZATION_STATE_PENDING").slice(0, 10);
  expect(holds).toHaveLength(10);
  await Promise.all(holds.map((h, i) => at(i).release(h.id).then(unwrap)));
  const again = await burst(20, () => false);
  expect(again.filter((a) => a.decision.approved)).toHaveLength(10);
  const captured = approved.find((a) => a.state === "SPEND_AUTHORIZATION_STATE_CAPTURED")!;
  unwrap(await at(0).reverse(captured.id));
  expect((await burst(1, () => false))[0]!.decision.cause).toBe("SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED");
  await expectUsageMatchesStates(at(1), userId, appId, 1000n * NANOS);
  expect(await at(2).usage(userId, appId)).toMatchObject({ authorizations: "100", maxAuthorizations: 100, authorizationsRemaining: 0 });
}
