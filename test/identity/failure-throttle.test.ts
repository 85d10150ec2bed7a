// The token endpoint's failure counts in the database: five attempts a window per key, cleared by a
// success, stored under a digest of the key, and forgotten once their window has passed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { FailureThrottle } from "../../src/identity/failure-throttle.js";
import { openStorage, type Storage } from "../../src/storage/connect.js";

const WINDOW_MS = 5 * 60_000;
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

const admitN = async (key: string, n: number) => {
  const waits: number[] = [];
  for (let i = 0; i < n; i++) waits.push(await throttle.admit(key));
  return waits;
};

describe("FailureThrottle", () => {
  it("admits five attempts in a window, then says how long to wait until the oldest leaves it", async () => {
    expect(await admitN(KEY, 5)).toEqual([0, 0, 0, 0, 0]);
    clock.advance(60_000);
    expect(await throttle.admit(KEY)).toBe(WINDOW_MS / 1000 - 60);
    expect(await throttle.admit(JSON.stringify(["client-abc", "203.0.113.10"]))).toBe(0);
    clock.advance(WINDOW_MS - 60_000);
    expect(await throttle.admit(KEY)).toBe(0);
  });

  it("counts attempts made all at once like attempts made one by one", async () => {
    const waits = await Promise.all(Array.from({ length: 12 }, () => throttle.admit(KEY)));
    expect(waits.filter((w) => w === 0)).toHaveLength(5);
  });

  it("forgets a key's attempts once it succeeds", async () => {
    await admitN(KEY, 5);
    await throttle.clear(KEY);
    expect(await admitN(KEY, 5)).toEqual([0, 0, 0, 0, 0]);
  });

  it("stores a digest of the key, not the client id or the address, and drops rows past their window", async () => {
    await admitN(KEY, 2);
    const rows = await storage.db.selectFrom("token_failures").selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toMatch(/client-abc|203\.0\.113/);
    clock.advance(WINDOW_MS + 1);
    await throttle.admit(JSON.stringify(["other", "198.51.100.1"]));
    expect(await storage.db.selectFrom("token_failures").select("key").execute()).toHaveLength(1);
  });
});
