// The spend window of a period: the calendar day, week (from Monday), month, quarter or year that
// contains an instant, in the fund policy's IANA time zone, as the UTC instants [start, end).
// Windows follow the zone's calendar across daylight-saving changes (a day may last 23 or 25
// hours); where a local midnight does not exist (a clock that jumps from 23:59:59 to 01:00), the
// day starts at the first instant of that date. Computed with the runtime's IANA database (Intl),
// in integers of milliseconds: no floating-point date arithmetic.
import { BoundedMap } from "../../core/bounded-map.js";
import type { WindowPeriod } from "../resolve.js";
import { PERIOD_KINDS } from "../types.js";

/** Every period that picks a window. */
export const WINDOW_PERIODS: readonly WindowPeriod[] = PERIOD_KINDS.filter((p): p is WindowPeriod => p !== "PERIOD_KIND_UNSPECIFIED");

interface SpendWindow {
  /** First instant of the window, epoch milliseconds (inclusive). */
  start: number;
  /** First instant after the window, epoch milliseconds (exclusive). */
  end: number;
}

/** A local calendar date. */
interface LocalDate {
  year: number;
  /** 1..12 */
  month: number;
  day: number;
}

const HOUR = 3_600_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    // Throws a RangeError for a name the IANA database does not know.
    f = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The local wall-clock time of `instant` in `timeZone`, read as if it were UTC (epoch milliseconds). */
function wallClock(instant: number, timeZone: string): number {
  // UTC's wall clock is the instant itself (JS time has no leap seconds): no Intl call.
  if (timeZone === "UTC") return instant;
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(instant)) if (p.type !== "literal") parts[p.type] = Number(p.value);
  const wholeSeconds = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wholeSeconds + (((instant % 1000) + 1000) % 1000);
}

const utcMidnight = (d: LocalDate): number => Date.UTC(d.year, d.month - 1, d.day);

/** The first instant whose local date in `timeZone` is `date`. */
function startOfLocalDate(date: LocalDate, timeZone: string): number {
  const wall = utcMidnight(date);
  // The zone's offsets around that date (offsets lie within ±14 hours, so these span every instant
  // whose wall clock could read that midnight).
  const offsets = [...new Set([-26, -14, 0, 14, 26].map((h) => wallClock(wall + h * HOUR, timeZone) - (wall + h * HOUR)))];
  const exact = offsets.map((o) => wall - o).filter((t) => wallClock(t, timeZone) === wall);
  if (exact.length > 0) return Math.min(...exact);
  // Midnight was skipped: the date starts at the transition, between the instant that reads just
  // before midnight and the one that reads just after.
  let before = wall - Math.max(...offsets);
  let after = wall - Math.min(...offsets);
  while (after - before > 1) {
    const mid = before + Math.floor((after - before) / 2);
    if (wallClock(mid, timeZone) >= wall) after = mid;
    else before = mid;
  }
  return after;
}

/** The local date `days` after `date` (calendar arithmetic, proleptic Gregorian). */
function addDays(date: LocalDate, days: number): LocalDate {
  const d = new Date(utcMidnight(date) + days * 24 * HOUR);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

function addMonths(date: LocalDate, months: number): LocalDate {
  const index = date.year * 12 + (date.month - 1) + months;
  return { year: Math.floor(index / 12), month: (index % 12) + 1, day: date.day };
}

/** The local first and next-after dates of the period that contains `date`. */
function periodDates(period: WindowPeriod, date: LocalDate): [LocalDate, LocalDate] {
  switch (period) {
    case "PERIOD_KIND_DAILY":
      return [date, addDays(date, 1)];
    case "PERIOD_KIND_WEEKLY": {
      // getUTCDay: Sunday 0 ... Saturday 6; weeks start on Monday.
      const sinceMonday = (new Date(utcMidnight(date)).getUTCDay() + 6) % 7;
      const monday = addDays(date, -sinceMonday);
      return [monday, addDays(monday, 7)];
    }
    case "PERIOD_KIND_MONTHLY": {
      const first = { ...date, day: 1 };
      return [first, addMonths(first, 1)];
    }
    case "PERIOD_KIND_QUARTERLY": {
      const first = { year: date.year, month: date.month - ((date.month - 1) % 3), day: 1 };
      return [first, addMonths(first, 3)];
    }
    case "PERIOD_KIND_YEARLY":
      return [{ year: date.year, month: 1, day: 1 }, { year: date.year + 1, month: 1, day: 1 }];
  }
}

/** The local date of `instant` in `timeZone`. */
function localDate(instant: number, timeZone: string): LocalDate {
  const wall = new Date(wallClock(instant, timeZone));
  return { year: wall.getUTCFullYear(), month: wall.getUTCMonth() + 1, day: wall.getUTCDate() };
}

/** The window of `period` in `timeZone` that contains the local date `local`. */
function windowOf(period: WindowPeriod, timeZone: string, local: LocalDate): SpendWindow {
  const [first, next] = periodDates(period, local);
  return { start: startOfLocalDate(first, timeZone), end: startOfLocalDate(next, timeZone) };
}

/** A window's bounds as they are stored and answered: ISO instants. */
export interface WindowBounds {
  windowStart: string;
  windowEnd: string;
}

/** Every period's window for the instants of one local day, with their bounds as stored. */
interface DayWindows {
  /** The local day's own window: every instant in it has the same windows. */
  day: SpendWindow;
  bounds: Readonly<Record<WindowPeriod, Readonly<WindowBounds>>>;
}

/**
 * The day last asked of each zone: a request's instant is almost always in it, and then needs no
 * local date (an Intl call outside UTC), none of the dozen Intl calls that find a window's bounds,
 * and no ISO formatting. Bounded by the zones in use (one per fund policy); the oldest goes first.
 */
const days = new BoundedMap<string, DayWindows>({ entries: 64 });

const iso = (ms: number) => new Date(ms).toISOString();

function dayWindows(timeZone: string, instant: number): DayWindows {
  const known = days.get(timeZone);
  if (known && instant >= known.day.start && instant < known.day.end) return known;
  const local = localDate(instant, timeZone);
  const windows = Object.fromEntries(WINDOW_PERIODS.map((p) => [p, windowOf(p, timeZone, local)])) as Record<WindowPeriod, SpendWindow>;
  const bounds = Object.fromEntries(WINDOW_PERIODS.map((p) => [p, Object.freeze({ windowStart: iso(windows[p].start), windowEnd: iso(windows[p].end) })])) as DayWindows["bounds"];
  const day: DayWindows = { day: windows.PERIOD_KIND_DAILY, bounds: Object.freeze(bounds) };
  days.set(timeZone, day);
  return day;
}

/** The window of every period that contains `instant`, as stored: ISO instants (shared, frozen; GetEffective reads the usage of each). */
export function spendWindowBounds(timeZone: string, instant: number): Readonly<Record<WindowPeriod, Readonly<WindowBounds>>> {
  return dayWindows(timeZone, instant).bounds;
}
