// A window's held amount is a counter swept as holds expire (migration 0016), not a sum over every
// open hold. Whatever the order of holds, captures, releases and expiries, and with the clock moving
// back as well as on (another instance's clock may be behind the last sweep), every decision and
// every GetEffective answers exactly the pending holds unexpired at its instant, and decides on it.
// A model of the authorizations, kept by this test, says what each answer must be.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { expectError } from "../limits/helpers.js";
import { appWithLimit, money, spendServerForFile, type SpendServer } from "./helpers.js";

let server: SpendServer;
spendServerForFile((s) => void (server = s));

const UNIT = 1_000_000_000n;
const LIMIT_UNITS = 40n;

interface Modelled {
  id: string;
  amount: bigint;
  expiresAt: number;
  state: "PENDING" | "CAPTURED" | "RELEASED";
}

/** A small deterministic generator (mulberry32), so that a failure replays. */
function random(seed: number): (n: number) => number {
  let a = seed;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

const nanosOf = (m: { units: string; nanos: number }) => BigInt(m.units) * UNIT + BigInt(m.nanos);

describe(`a window's held amount (${testDialect()})`, () => {
  it("is exact at every instant through holds, captures, releases and expiries, the clock moving on and back", async () => {
    const { ts, admin, spend, subject } = server;
    // Mid-month, so that every instant of the run is in one monthly window.
    const start = Date.parse("2026-11-10T12:00:00Z");
    ts.clock.set(start);
    const app = await appWithLimit(admin, subject.userId, String(LIMIT_UNITS));
    const next = random(1516);
    const model: Modelled[] = [];
    let spent = 0n;
    const live = (now: number) => model.filter((m) => m.state === "PENDING" && m.expiresAt > now);
    const heldAt = (now: number) => live(now).reduce((sum, m) => sum + m.amount, 0n);
    const counts = { approved: 0, declined: 0, captured: 0, released: 0, refused: 0, back: 0 };

    for (let step = 0; step < 300; step++) {
      const now = ts.clock.now();
      const what = next(10);
      const at = `step ${step} (${what}) at ${new Date(now).toISOString()}`;
      if (what < 4) {
        const amount = BigInt(1 + next(6)) * UNIT;
        const holdSeconds = 1 + next(40);
        const capture = next(8) === 0;
        const answer = unwrap(await spend.authorize({ userId: subject.userId, appId: app, amount: money(String(amount / UNIT)), ...(capture ? { capture } : { holdSeconds }) })).authorization;
        const approved = spent + heldAt(now) + amount <= LIMIT_UNITS * UNIT;
        expect(answer.decision.approved, at).toBe(approved);
        if (approved) {
          if (capture) spent += amount;
          else model.push({ id: answer.id, amount, expiresAt: now + holdSeconds * 1000, state: "PENDING" });
        }
        counts[approved ? "approved" : "declined"]++;
        expect({ spent: nanosOf(answer.decision.usage.spent), held: nanosOf(answer.decision.usage.held) }, at).toEqual({ spent, held: heldAt(now) });
      } else if (what < 7 && model.length > 0) {
        // A capture or release of any hold: those pending at this instant change, the others are refused.
        const m = model[next(model.length)]!;
        const release = what >= 5;
        const answer = release ? await spend.release(m.id) : await spend.capture(m.id);
        if (m.state === "PENDING" && m.expiresAt > now) {
          expect(answer.response.status, at).toBe(200);
          m.state = release ? "RELEASED" : "CAPTURED";
          if (!release) spent += m.amount;
          counts[release ? "released" : "captured"]++;
        } else if (!(release && m.state === "RELEASED")) {
          expectError(answer, 409, "AUTHORIZATION_NOT_PENDING");
          counts.refused++;
        }
      } else if (what < 8) {
        ts.clock.advance(next(40_000));
      } else {
        ts.clock.set(Math.max(start, now - next(40_000)));
        counts.back++;
      }
      const usage = unwrap(await admin.effective(subject.userId, app)).effective.usage;
      expect({ spent: nanosOf(usage.spent), held: nanosOf(usage.held) }, `GetEffective after ${at}`).toEqual({ spent, held: heldAt(ts.clock.now()) });
    }
    // Every path ran: approvals and declines on the counter, changes, refusals of expired holds, the clock moved back.
    for (const [name, n] of Object.entries(counts)) expect(n, name).toBeGreaterThan(2);
  });
});
