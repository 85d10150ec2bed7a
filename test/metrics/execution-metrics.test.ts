// tenant_api_executions_waiting without a database: the count (execution-claims.ts's countRunnable, replaced
// here) is asked as of the injected clock and up to the cap, at most once per WAITING.ttlMs whatever
// the scrapes, and a scrape waits WAITING.deadlineMs at most for it, answering NaN past it or when
// the count failed. Fake timers move both the deadline's setTimeout and performance.now (the cache's).
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { ExecutionMetrics, WAITING } from "../../src/metrics/execution-metrics.js";
import { countRunnable } from "../../src/automations/execution-claims.js";
import type { Storage } from "../../src/storage/connect.js";

vi.mock("../../src/automations/execution-claims.js", () => ({ countRunnable: vi.fn() }));
const count = vi.mocked(countRunnable);

const T0 = Date.parse("2026-11-20T09:00:00Z");
const db = { fake: "db" } as unknown as Storage["db"];
let clock: ManualClock;
let registry: Registry;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  count.mockReset();
  clock = new ManualClock(T0);
  registry = new Registry();
  new ExecutionMetrics(registry).watch({ storage: { db } as Storage, clock, runs: () => [], destinations: async () => [{ state: "NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN", count: 2 }] });
});
afterEach(() => vi.useRealTimers());

async function waiting(): Promise<number> {
  const metric = registry.getSingleMetric("tenant_api_executions_waiting")!;
  return (await metric.get()).values[0]!.value;
}

/** A count that answers when told to. */
function pendingCount(): { resolve(n: number): void; reject(e: Error): void } {
  let answer!: { resolve(n: number): void; reject(e: Error): void };
  count.mockImplementationOnce(() => new Promise<number>((resolve, reject) => (answer = { resolve, reject })));
  return {
    resolve: (n) => answer.resolve(n),
    reject: (e) => answer.reject(e),
  };
}

it("counts as of the injected clock up to the cap, and keeps the count for WAITING.ttlMs", async () => {
  count.mockResolvedValueOnce(12).mockResolvedValueOnce(3);
  expect(await waiting()).toBe(12);
  expect(count).toHaveBeenCalledTimes(1);
  expect(count).toHaveBeenLastCalledWith(db, new Date(T0).toISOString(), WAITING.cap);

  // Scrapes within the TTL read the kept count, whatever the injected clock says.
  clock.advance(60_000);
  await vi.advanceTimersByTimeAsync(WAITING.ttlMs - 1);
  expect(await waiting()).toBe(12);
  expect(count).toHaveBeenCalledTimes(1);

  // Past it, counted again, as of the clock now.
  await vi.advanceTimersByTimeAsync(1);
  expect(await waiting()).toBe(3);
  expect(count).toHaveBeenCalledTimes(2);
  expect(count).toHaveBeenLastCalledWith(db, new Date(T0 + 60_000).toISOString(), WAITING.cap);
});

it("answers NaN when the count takes longer than WAITING.deadlineMs; the late count is kept for the next scrape", async () => {
  const slow = pendingCount();
  let read: number | undefined;
  const scraping = waiting().then((v) => (read = v));
  await vi.advanceTimersByTimeAsync(WAITING.deadlineMs - 1);
  expect(read).toBeUndefined();
  // A scrape meanwhile waits on the same count, not a second one.
  const second = waiting();
  await vi.advanceTimersByTimeAsync(1);
  await scraping;
  expect(read).toBeNaN();
  expect(count).toHaveBeenCalledTimes(1);

  slow.resolve(42);
  expect(await second).toBe(42);
  expect(await waiting()).toBe(42);
  expect(count).toHaveBeenCalledTimes(1);
});

it("answers NaN when the count fails, and counts again at the next scrape", async () => {
  const failing = pendingCount();
  const scraping = waiting();
  failing.reject(new Error("database unavailable"));
  expect(await scraping).toBeNaN();
  count.mockResolvedValueOnce(5);
  expect(await waiting()).toBe(5);
  expect(count).toHaveBeenCalledTimes(2);
});

it("answers a count that comes within the deadline", async () => {
  const late = pendingCount();
  const scraping = waiting();
  await vi.advanceTimersByTimeAsync(WAITING.deadlineMs - 1);
  late.resolve(7);
  expect(await scraping).toBe(7);
});

describe("tenant_api_notification_destinations", () => {
  it("shows every state, 0 where no destination is in it", async () => {
    const values = (await registry.getSingleMetric("tenant_api_notification_destinations")!.get()).values;
    expect(Object.fromEntries(values.map((v) => [v.labels.state, v.value]))).toEqual({
      NOTIFICATION_DESTINATION_STATE_HEALTHY: 0,
      NOTIFICATION_DESTINATION_STATE_FAILING: 0,
      NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN: 2,
      NOTIFICATION_DESTINATION_STATE_DISABLED: 0,
    });
  });
});
