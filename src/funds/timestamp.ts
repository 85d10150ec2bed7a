// RFC 3339 date-times. Date.parse alone is too lenient (it accepts 2026-02-30 and 24:00), so
// every component is range-checked before the instant is taken.
import { invalidField } from "../core/errors.js";

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/i;
// Years 0000..9999 after conversion to UTC, so the canonical form is itself RFC 3339.
const MIN_MS = Date.parse("0000-01-01T00:00:00Z");
const MAX_MS = Date.parse("9999-12-31T23:59:59.999Z");

function daysInMonth(year: number, month: number): number {
  // Day 0 of the next month is the last day of this one; setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 19xx.
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0);
  return d.getUTCDate();
}

/**
 * Validates an RFC 3339 date-time and returns it canonical: UTC, millisecond precision
 * (`2026-12-01T00:00:00.000Z`), so stored instants compare and print one way. Leap seconds
 * (`:60`) are refused: the instant they name cannot be represented.
 */
export function parseTimestamp(input: unknown, path: string): string {
  const m = typeof input === "string" ? RFC3339.exec(input) : null;
  if (!m || typeof input !== "string") throw invalidField(path, "must be an RFC 3339 date-time", "INVALID_TIMESTAMP");
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const offsetHour = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinute = m[10] === undefined ? 0 : Number(m[10]);
  const ms = Date.parse(input.toUpperCase());
  const valid =
    month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) &&
    hour <= 23 && minute <= 59 && second <= 59 && offsetHour <= 23 && offsetMinute <= 59 &&
    Number.isFinite(ms) && ms >= MIN_MS && ms <= MAX_MS;
  if (!valid) throw invalidField(path, "must be an RFC 3339 date-time", "INVALID_TIMESTAMP");
  return new Date(ms).toISOString();
}
