// Time zone names as the fund policy stores and answers them: one spelling per zone, its canonical
// name. The runtime's IANA database (Intl) says which zone a name means (any case, links followed:
// `US/Eastern` is `America/New_York`; UTC's aliases are `UTC`, as ECMAScript names them). Its names
// are CLDR's, which keep a few that IANA has replaced (`Asia/Calcutta`, `Europe/Kiev`): those are
// answered by IANA's current name, the one in its zone.tab (test/funds/time-zone.test.ts checks the
// list).
import { BoundedMap } from "../core/bounded-map.js";

/** The CLDR names of zones IANA has renamed, and IANA's current names for them. */
const RENAMED: Readonly<Record<string, string>> = {
  "Africa/Asmera": "Africa/Asmara",
  "America/Buenos_Aires": "America/Argentina/Buenos_Aires",
  "America/Catamarca": "America/Argentina/Catamarca",
  "America/Coral_Harbour": "America/Atikokan",
  "America/Cordoba": "America/Argentina/Cordoba",
  "America/Godthab": "America/Nuuk",
  "America/Indianapolis": "America/Indiana/Indianapolis",
  "America/Jujuy": "America/Argentina/Jujuy",
  "America/Louisville": "America/Kentucky/Louisville",
  "America/Mendoza": "America/Argentina/Mendoza",
  "Asia/Calcutta": "Asia/Kolkata",
  "Asia/Katmandu": "Asia/Kathmandu",
  "Asia/Rangoon": "Asia/Yangon",
  "Asia/Saigon": "Asia/Ho_Chi_Minh",
  "Atlantic/Faeroe": "Atlantic/Faroe",
  "Europe/Kiev": "Europe/Kyiv",
  "Pacific/Enderbury": "Pacific/Kanton",
  "Pacific/Ponape": "Pacific/Pohnpei",
  "Pacific/Truk": "Pacific/Chuuk",
};

/** Names already looked up (a lookup builds an Intl.DateTimeFormat), and their canonical names; null for an unknown name. */
const known = new BoundedMap<string, string | null>({ entries: 1024 });

/** The canonical name of the zone `name` names, in any case or by any of its links; undefined for a name the runtime does not know. */
export function canonicalTimeZone(name: string): string | undefined {
  // Newer runtimes also take UTC offsets (`+01:00`) as zones; IANA names none so.
  if (/^[+-]/.test(name)) return undefined;
  let canonical = known.get(name);
  if (canonical === undefined) {
    try {
      const resolved = new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
      canonical = RENAMED[resolved] ?? resolved;
    } catch {
      // A RangeError: no zone of that name.
      canonical = null;
    }
    known.set(name, canonical);
  }
  return canonical ?? undefined;
}
