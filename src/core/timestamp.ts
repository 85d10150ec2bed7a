// RFC 3339 date-times. Date.parse alone is too lenient (it accepts 2026-02-30 and 24:00), so
// every component is range-checked before the instant is taken.
import { invalidField } from "./errors.js";

// A year of five digits or more is well formed but out of range, and is told so.
const RFC3339 = /^(\d{4}|[1-9]\d{4,})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/i;
// Years 0001..9999 after conversion to UTC, as google.protobuf.Timestamp and CEL timestamps: the
// canonical form is itself RFC 3339, and a CEL step can compare every stored instant.
export const MIN_YEAR = 1;
export const MAX_YEAR = 9999;
const MIN_MS = Date.parse("0001-01-01T00:00:00Z");
const MAX_MS = Date.parse("9999-12-31T23:59:59.999Z");

export const TIMESTAMP_FORM = "must be an RFC 3339 date-time";
export const TIMESTAMP_RANGE = "must be in years 0001 to 9999 (UTC)";

function daysInMonth(year: number, month: number): number {
  // Day 0 of the next month is the last day of this one; setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 19xx.
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0);
  return d.getUTCDate();
}

/** The UTC year of an instant outside 0001..9999, or undefined when it is inside. */
export function yearOutOfRange(instant: Date): number | undefined {
  const ms = instant.getTime();
  return ms < MIN_MS || ms > MAX_MS ? instant.getUTCFullYear() : undefined;
}

export type TimestampCheck = { canonical: string } | { problem: typeof TIMESTAMP_FORM } | { problem: typeof TIMESTAMP_RANGE; year: number };

/**
 * An RFC 3339 date-time in its canonical form, UTC, millisecond precision
 * (`2026-12-01T00:00:00.000Z`), so stored instants compare and print one way; or why not. Leap
 * seconds (`:60`) are refused: the instant they name cannot be represented.
 */
export function checkTimestamp(input: unknown): TimestampCheck {
  const m = typeof input === "string" ? RFC3339.exec(input) : null;
  if (!m || typeof input !== "string") return { problem: TIMESTAMP_FORM };
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const offsetHour = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinute = m[10] === undefined ? 0 : Number(m[10]);
  const valid =
    month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) &&
    hour <= 23 && minute <= 59 && second <= 59 && offsetHour <= 23 && offsetMinute <= 59;
  if (!valid) return { problem: TIMESTAMP_FORM };
  if (year > MAX_YEAR) return { problem: TIMESTAMP_RANGE, year };
  const instant = new Date(Date.parse(input.toUpperCase()));
  if (Number.isNaN(instant.getTime())) return { problem: TIMESTAMP_FORM };
  const outside = yearOutOfRange(instant);
  return outside === undefined ? { canonical: instant.toISOString() } : { problem: TIMESTAMP_RANGE, year: outside };
}

/** The canonical form of an RFC 3339 date-time (see checkTimestamp), else a 400 INVALID_TIMESTAMP for `path`. */
export function parseTimestamp(input: unknown, path: string): string {
  const checked = checkTimestamp(input);
  if ("problem" in checked) throw invalidField(path, checked.problem, "INVALID_TIMESTAMP");
  return checked.canonical;
}
