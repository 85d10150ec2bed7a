// The token bucket per key: a window's quota at once, then one request each window/quota; exact
// remaining and reset figures; a look that takes nothing, and a charge past the quota; each
// instance's share of the quota; a bounded number of keys.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { RateLimiter } from "../../src/core/rate-limiter.js";
import { sourceKey } from "../../src/http/rate-limit.js";

const start = Date.parse("2026-11-23T10:00:00Z");

function limiter(quota: number, windowSeconds: number, instances = 1, maxKeys?: number) {
  const clock = new ManualClock(start);
  const count = { instances };
  return { clock, count, limiter: new RateLimiter({ quota, windowSeconds }, clock, () => count.instances, maxKeys) };
}

const takeAll = (l: RateLimiter, key: string, n: number) => Array.from({ length: n }, () => l.take(key));

describe("a token bucket per key", () => {
  it("admits the window's quota at once, then refuses with the seconds until the next request", () => {
    const { limiter: l } = limiter(5, 10);
    const answers = takeAll(l, "a", 7);
    expect(answers.map((a) => a.allowed)).toEqual([true, true, true, true, true, false, false]);
    expect(answers.map((a) => a.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0]);
    // Admitted: seconds until the bucket is full again (2 s a request). Refused: until one fits (2 s).
    expect(answers.map((a) => a.seconds)).toEqual([2, 4, 6, 8, 10, 2, 2]);
  });

  it("refills one request each window/quota, and never beyond the quota", () => {
    const { clock, limiter: l } = limiter(5, 10);
    takeAll(l, "a", 5);
    clock.advance(1999);
    expect(l.take("a")).toMatchObject({ allowed: false, seconds: 1 });
    clock.advance(1);
    expect(l.take("a")).toMatchObject({ allowed: true, remaining: 0 });
    expect(l.take("a").allowed).toBe(false);
    clock.advance(60_000);
    expect(takeAll(l, "a", 6).map((a) => a.allowed)).toEqual([true, true, true, true, true, false]);
  });

  it("keeps keys apart", () => {
    const { limiter: l } = limiter(2, 60);
    takeAll(l, "a", 3);
    expect(l.take("a").allowed).toBe(false);
    expect(l.take("b")).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("with n instances live, admits quota/n on each", () => {
    const { limiter: l } = limiter(30, 60, 3);
    const answers = takeAll(l, "a", 11);
    expect(answers.filter((a) => a.allowed)).toHaveLength(10);
    // A request costs 3/30 of the window: 6 s until the next one.
    expect(answers[10]).toMatchObject({ allowed: false, seconds: 6 });
  });

  it("admits at least one request a window on each instance, even with more instances than the quota", () => {
    const { clock, limiter: l } = limiter(2, 60, 5);
    expect(takeAll(l, "a", 2).map((a) => a.allowed)).toEqual([true, false]);
    clock.advance(60_000);
    expect(l.take("a").allowed).toBe(true);
  });

  it("when the count of instances changes, a key keeps the part of its share it had used", () => {
    const { count, limiter: l } = limiter(20, 60, 2);
    takeAll(l, "a", 5); // half of the share of 10
    count.instances = 1;
    // Half of the whole quota (20) is left.
    expect(takeAll(l, "a", 11).filter((a) => a.allowed)).toHaveLength(10);
  });

  it("peek answers what take would, taking nothing and keeping no key", () => {
    const { limiter: l } = limiter(2, 10);
    expect(l.peek("a")).toEqual({ allowed: true, remaining: 2, seconds: 0 });
    expect(l.size).toBe(0);
    takeAll(l, "a", 2);
    expect(l.peek("a")).toEqual({ allowed: false, remaining: 0, seconds: 5 });
    expect(l.take("a")).toEqual({ allowed: false, remaining: 0, seconds: 5 });
  });

  it("charge counts a request whatever the bucket holds: what it takes past the quota delays the next admission", () => {
    const { clock, limiter: l } = limiter(2, 10);
    const charged = Array.from({ length: 3 }, () => l.charge("a"));
    expect(charged).toEqual([
      { allowed: true, remaining: 1, seconds: 5 },
      { allowed: true, remaining: 0, seconds: 10 },
      { allowed: false, remaining: 0, seconds: 15 },
    ]);
    // Three counted where two fit: one more fits once two have been earned back (10 s), not one (5 s).
    expect(l.peek("a")).toMatchObject({ allowed: false, seconds: 10 });
    clock.advance(9999);
    expect(l.take("a")).toMatchObject({ allowed: false, seconds: 1 });
    clock.advance(1);
    expect(l.take("a")).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("holds at most maxKeys keys, forgetting the least recently seen", () => {
    const { limiter: l } = limiter(1, 60, 1, 1000);
    l.take("kept");
    for (let i = 0; i < 5000; i++) {
      l.take(`flood-${i}`);
      if (i % 100 === 0) l.take("kept");
    }
    expect(l.size).toBe(1000);
    // "kept" was seen lately: still over its limit, not forgotten.
    expect(l.take("kept").allowed).toBe(false);
    // The oldest of the flood was forgotten: it starts again with a full bucket.
    expect(l.take("flood-0").allowed).toBe(true);
  });
});

describe("the key of a source address", () => {
  it("is the IPv4 address, IPv4-mapped IPv6 included", () => {
    expect(sourceKey("203.0.113.9")).toBe("203.0.113.9");
    expect(sourceKey("::ffff:203.0.113.9")).toBe("203.0.113.9");
  });

  it("is the /64 network of an IPv6 address: a host's addresses share one limit", () => {
    expect(sourceKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(sourceKey("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(sourceKey("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
  });
});
