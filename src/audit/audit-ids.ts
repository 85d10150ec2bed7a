// Audit event ids: time-ordered (src/core/ids.ts), so the trail's order is its ids' and a range of
// instants is a range of ids. Events one process records in the same millisecond are numbered in
// their order after the instant, so newest first holds for them too; events of two instances in
// the same millisecond are concurrent, and sort by their random part.
import { base62, timeOrderedId, timeOrderedPrefix } from "../core/ids.js";

const PREFIX = "aud_";

/** The largest instant a time-ordered id can spell (in the year 8888); RFC 3339 admits later ones. */
const LAST_ID_INSTANT = 62 ** 8 - 1;

/** Four base62 digits: 14,776,336 events a millisecond before the order within it is lost. */
const SEQUENCE_DIGITS = 4;
const SEQUENCE_MAX = 62 ** SEQUENCE_DIGITS - 1;

let lastMs = -1;
let sequence = 0;

/** `n` as SEQUENCE_DIGITS base62 digits, sorting as the numbers do. */
const digits = (n: number): string => timeOrderedPrefix(n).slice(-SEQUENCE_DIGITS);

export function newAuditId(ms: number): string {
  sequence = ms === lastMs ? Math.min(sequence + 1, SEQUENCE_MAX) : 0;
  lastMs = ms;
  return PREFIX + timeOrderedId(ms, 0) + digits(sequence) + base62(8);
}

/** The first id an event of instant `ms` or later can have: ids spell no instant before 1970 or after LAST_ID_INSTANT. */
export const firstAuditIdAt = (ms: number): string => PREFIX + timeOrderedPrefix(Math.min(LAST_ID_INSTANT, Math.max(0, ms)));
