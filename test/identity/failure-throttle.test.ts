// The token endpoint's failure throttle over a real SQLite database: five places a key, each held by
// an attempt from its admission until it is decided; failures keep theirs for the window, a
// success frees its own and clears the failures; a request finding the places held by attempts in
// flight waits for them, one finding them taken by failures is refused until the oldest leaves the
// window; an attempt never decided lapses. Stored under a digest of the key, in a form the release
// before reads as attempts that count.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { FailureThrottle, type Admission, type Attempt } from "../../src/identity/failure-throttle.js";
import { openStorage, type Storage } from "../../src/storage/connect.js";

const WINDOW_MS = 5 * 60_000;
const LAPSE_MS = 30_000;
const KEY = JSON.stringify(["client-abc", "203.0.113.9"]);

let dir: string;
let storage: Storage;
let clock: ManualClock;
let throttle: FailureThrottle;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-throttle-"));
  storage = await openStorage({ kind: "sqlite", path: join(dir, "db.sqlite") });
  clock = new ManualClock(Date.parse("2026-11-23T10:00:00Z"));
  throttle = new FailureThrottle(storage, clock);
});

afterEach(async () => {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

const admitted = (admission: Admission): Attempt => {
  if (!("attempt" in admission)) throw new Error(`refused: ${JSON.stringify(admission)}`);
  return admission.attempt;
};
const admitN = async (n: number, key = KEY) => {
  const attempts: Attempt[] = [];
  for (let i = 0; i < n; i++) attempts.push(admitted(await throttle.admit(key)));
  return attempts;
};
const failN = async (n: number, key = KEY) => {
  for (const attempt of await admitN(n, key)) await attempt.failed();
};
/** Whether `promise` is still pending after the throttle has had time to look again (its poll: 50 ms). */
const pending = async (promise: Promise<unknown>) => {
  const marker = Symbol();
  return (await Promise.race([promise, new Promise((r) => setTimeout(() => r(marker), 200))])) === marker;
};
const row = async () => storage.db.selectFrom("token_failures").selectAll().executeTakeFirst();

describe("FailureThrottle", () => {
  it("five failures: refused until the oldest leaves the window, Retry-After right to the second and never 0", async () => {
    const start = clock.now();
    for (let i = 0; i < 5; i++) {
      await failN(1);
      clock.advance(10_000);
    }
    // The oldest failure leaves the window at start + WINDOW_MS; now is start + 50 s.
    expect(await throttle.admit(KEY)).toEqual({ retryAfter: 250, undecided: false });
    expect(await throttle.admit(JSON.stringify(["client-abc", "203.0.113.10"])), "another address").toHaveProperty("attempt");
    clock.set(start + WINDOW_MS - 1001);
    expect(await throttle.admit(KEY)).toEqual({ retryAfter: 2, undecided: false });
    clock.set(start + WINDOW_MS - 1);
    expect(await throttle.admit(KEY)).toEqual({ retryAfter: 1, undecided: false });
    clock.set(start + WINDOW_MS);
    const next = admitted(await throttle.admit(KEY));
    await next.failed();
    // Five again: the second oldest and this one among them.
    expect(await throttle.admit(KEY)).toEqual({ retryAfter: 10, undecided: false });
  });

  it("attempts in flight hold the places: a sixth waits until one is decided; a success frees its place, a failure keeps it", async () => {
    const attempts = await admitN(5);
    const sixth = throttle.admit(KEY);
    expect(await pending(sixth)).toBe(true);
    await attempts[0]!.failed();
    expect(await pending(sixth), "a failure keeps its place").toBe(true);
    await attempts[1]!.succeeded();
    const admittedSixth = admitted(await sixth);
    // The success cleared the failure: three in flight and the sixth, one place free.
    const seventh = admitted(await throttle.admit(KEY));
    const eighth = throttle.admit(KEY);
    expect(await pending(eighth)).toBe(true);
    for (const attempt of [attempts[2]!, attempts[3]!, attempts[4]!, admittedSixth, seventh]) await attempt.succeeded();
    await admitted(await eighth).succeeded();
    expect(await row(), "nothing left to count").toBeUndefined();
  });

  it("guesses all at once: five are admitted and the rest wait; once those five fail, the rest are refused until the window has passed", async () => {
    const all = Array.from({ length: 12 }, () => throttle.admit(KEY));
    await new Promise((r) => setTimeout(r, 200));
    const settled = await Promise.all(all.map(async (a) => ((await pending(a)) ? undefined : await a)));
    const first = settled.filter((a): a is Admission => a !== undefined);
    expect(first).toHaveLength(5);
    for (const a of first) await admitted(a).failed();
    const rest = await Promise.all(all.filter((_, i) => settled[i] === undefined));
    expect(rest).toEqual(Array.from({ length: 7 }, () => ({ retryAfter: WINDOW_MS / 1000, undecided: false })));
  });

  it("an attempt never decided (its instance died) lapses after 30 s by the clock: a request waiting for its place is then admitted", async () => {
    await admitN(2);
    await failN(3);
    const waiting = throttle.admit(KEY);
    expect(await pending(waiting)).toBe(true);
    clock.advance(LAPSE_MS - 1);
    expect(await pending(waiting)).toBe(true);
    clock.advance(1);
    admitted(await waiting);
  });

  it("an attempt whose check failed frees its place", async () => {
    const attempts = await admitN(5);
    const sixth = throttle.admit(KEY);
    await attempts[0]!.abandoned();
    admitted(await sixth);
  });

  it("stores a digest of the key in a form the release before reads as attempts that count, and drops rows past their window", async () => {
    await failN(2);
    clock.advance(1000);
    await admitN(3);
    const rows = await storage.db.selectFrom("token_failures").selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toMatch(/client-abc|203\.0\.113/);
    // The release before: `attempts` a JSON array of numbers, ascending, every one within the window an
    // attempt; five of them, and it admits no sixth.
    const attempts = JSON.parse(rows[0]!.attempts) as number[];
    expect(attempts).toEqual([...attempts].sort((a, b) => a - b));
    expect(attempts.filter((t) => t > clock.now() - WINDOW_MS)).toHaveLength(5);
    expect(rows[0]!.last_at).toBe(new Date(clock.now()).toISOString());
    clock.advance(WINDOW_MS + 1);
    await throttle.admit(JSON.stringify(["other", "198.51.100.1"]));
    expect(await storage.db.selectFrom("token_failures").select("key").execute()).toHaveLength(1);
  });
});
