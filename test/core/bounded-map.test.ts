// BoundedMap: bounded by its entries and by the sum of their sizes, oldest out first.
import { describe, expect, it } from "vitest";
import { BoundedMap } from "../../src/core/bounded-map.js";

describe("BoundedMap", () => {
  it("keeps at most `entries` entries, forgetting the oldest", () => {
    const cache = new BoundedMap<string, number>({ entries: 3, size: 1_000 });
    for (const [i, key] of ["a", "b", "c", "d"].entries()) cache.set(key, i, 1);
    expect(cache.get("a")).toBeUndefined();
    expect([cache.get("b"), cache.get("c"), cache.get("d")]).toEqual([1, 2, 3]);
    expect(cache.usage).toEqual({ entries: 3, size: 3 });
  });

  it("keeps the sizes' sum within `size`, forgetting as many of the oldest as it takes", () => {
    const cache = new BoundedMap<string, string>({ entries: 100, size: 10 });
    cache.set("a", "a", 4);
    cache.set("b", "b", 4);
    cache.set("c", "c", 1);
    // 4 + 4 + 1 + 9 is over 10: "a" and "b" go, "c" fits beside "d" and stays.
    cache.set("d", "d", 9);
    expect(cache.get("a") ?? cache.get("b")).toBeUndefined();
    expect([cache.get("c"), cache.get("d")]).toEqual(["c", "d"]);
    expect(cache.usage).toEqual({ entries: 2, size: 10 });
  });

  it("does not keep an entry larger than the whole budget, and forgets what it replaced", () => {
    const cache = new BoundedMap<string, string>({ entries: 100, size: 10 });
    cache.set("a", "small", 2);
    cache.set("a", "huge", 11);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.usage).toEqual({ entries: 0, size: 0 });
  });

  it("a refreshed entry is the newest and counts its new size only", () => {
    const cache = new BoundedMap<string, number>({ entries: 2, size: 100 });
    cache.set("a", 1, 5);
    cache.set("b", 2, 5);
    cache.set("a", 3, 7);
    cache.set("c", 4, 1);
    expect(cache.get("b")).toBeUndefined();
    expect([cache.get("a"), cache.get("c")]).toEqual([3, 4]);
    expect(cache.usage).toEqual({ entries: 2, size: 8 });
  });

  it("stays within both bounds over many entries of random sizes", () => {
    const cache = new BoundedMap<number, number>({ entries: 50, size: 1_000 });
    for (let i = 0; i < 10_000; i++) {
      cache.set(i % 300, i, Math.floor(Math.random() * 120));
      const { entries, size } = cache.usage;
      expect(entries).toBeLessThanOrEqual(50);
      expect(size).toBeLessThanOrEqual(1_000);
    }
  });
});

describe("BoundedMap without a size limit", () => {
  it("keeps at most `entries` entries, oldest out first, and counts sizes it is not given as 0", () => {
    const map = new BoundedMap<string, number>({ entries: 2 });
    map.set("a", 1);
    map.set("b", 2);
    map.set("c", 3);
    expect([map.get("a"), map.get("b"), map.get("c")]).toEqual([undefined, 2, 3]);
    expect(map.usage).toEqual({ entries: 2, size: 0 });
  });

  it("a touched entry is the newest: the least recently used goes first", () => {
    const map = new BoundedMap<string, number>({ entries: 2 });
    map.set("a", 1);
    map.set("b", 2);
    expect(map.touch("a")).toBe(1);
    map.set("c", 3);
    expect([map.get("a"), map.get("b"), map.get("c")]).toEqual([1, undefined, 3]);
    expect(map.touch("b")).toBeUndefined();
  });

  it("a plain get does not refresh: the first in goes first", () => {
    const map = new BoundedMap<string, number>({ entries: 2 });
    map.set("a", 1);
    map.set("b", 2);
    expect(map.get("a")).toBe(1);
    map.set("c", 3);
    expect(map.get("a")).toBeUndefined();
  });
});
