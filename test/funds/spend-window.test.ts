// Spend windows against the shared vectors: each period in each time zone, across daylight-saving
// changes (days of 23, 23.5 and 25 hours) and a skipped local midnight.
import { describe, expect, it } from "vitest";
import { spendWindowBounds } from "../../src/funds/spends/spend-window.js";
import type { PeriodKind } from "../../src/funds/types.js";
import { vectors } from "../support/vectors.js";

interface Case {
  timeZone: string;
  at: string;
  period: Exclude<PeriodKind, "PERIOD_KIND_UNSPECIFIED">;
  windowStart: string;
  windowEnd: string;
  hours: number;
}

// The shared vectors, as the repository carries them (test/support/vectors.ts).
const { cases } = vectors<{ cases: Case[] }>("spend-windows.json");

/** The window of `period` containing `instant`, as spendWindowBounds answers it, in epoch milliseconds. */
function spendWindow(period: Case["period"], timeZone: string, instant: number): { start: number; end: number } {
  const { windowStart, windowEnd } = spendWindowBounds(timeZone, instant)[period];
  return { start: Date.parse(windowStart), end: Date.parse(windowEnd) };
}

describe("spend windows (shared vectors)", () => {
  it("has the vectors", () => expect(cases.length).toBeGreaterThan(50));

  it.each(cases.map((c) => [`${c.period} ${c.timeZone} ${c.at}`, c] as const))("%s", (_, c) => {
    const window = spendWindow(c.period, c.timeZone, Date.parse(c.at));
    expect({ start: new Date(window.start).toISOString(), end: new Date(window.end).toISOString() }).toEqual({ start: c.windowStart, end: c.windowEnd });
    expect((window.end - window.start) / 3_600_000).toBe(c.hours);
  });

  it("every instant of a window maps to that window (its first and last millisecond)", () => {
    for (const c of cases) {
      const { start, end } = spendWindow(c.period, c.timeZone, Date.parse(c.at));
      expect(spendWindow(c.period, c.timeZone, start)).toEqual({ start, end });
      expect(spendWindow(c.period, c.timeZone, end - 1)).toEqual({ start, end });
      expect(spendWindow(c.period, c.timeZone, end).start).toBe(end);
    }
  });

  it("spendWindowBounds answers every period's window, as ISO instants", () => {
    for (const c of cases) {
      const all = spendWindowBounds(c.timeZone, Date.parse(c.at));
      expect(Object.keys(all)).toEqual(["PERIOD_KIND_DAILY", "PERIOD_KIND_WEEKLY", "PERIOD_KIND_MONTHLY", "PERIOD_KIND_QUARTERLY", "PERIOD_KIND_YEARLY"]);
      expect(all[c.period]).toEqual({ windowStart: c.windowStart, windowEnd: c.windowEnd });
    }
  });

  it("answers the vectors in any order: the day kept per zone is used only for instants of that day", () => {
    const asked = [...cases].reverse().flatMap((c) => {
      const at = Date.parse(c.at);
      const { start, end } = spendWindow(c.period, c.timeZone, at);
      // The instant, the window's last millisecond, the next window's first, and the instant again.
      return [at, end - 1, end, at].map((instant) => ({ c, instant, window: spendWindow(c.period, c.timeZone, instant) }));
    });
    for (const { c, instant, window } of asked) {
      const inWindow = instant >= Date.parse(c.windowStart) && instant < Date.parse(c.windowEnd);
      if (inWindow) expect(window).toEqual({ start: Date.parse(c.windowStart), end: Date.parse(c.windowEnd) });
      else expect(window.start).toBe(Date.parse(c.windowEnd));
    }
  });
});
