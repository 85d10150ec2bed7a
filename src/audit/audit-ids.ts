// Audit event ids: time-ordered (src/core/ids.ts), so the trail's order is its ids' and a range of
// instants is a range of ids.
import { timeOrderedId, timeOrderedPrefix } from "../core/ids.js";

const PREFIX = "aud_";

/** The largest instant a time-ordered id can spell (in the year 8888); RFC 3339 admits later ones. */
const LAST_ID_INSTANT = 62 ** 8 - 1;

export const newAuditId = (ms: number): string => PREFIX + timeOrderedId(ms, 12);

/** The first id an event of instant `ms` or later can have: ids spell no instant before 1970 or after LAST_ID_INSTANT. */
export const firstAuditIdAt = (ms: number): string => PREFIX + timeOrderedPrefix(Math.min(LAST_ID_INSTANT, Math.max(0, ms)));
