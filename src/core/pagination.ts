// Keyset pagination shared by every List and Search (seed 4.5 and 8). A page token carries the sort
// key of the last row served, bound by an HMAC to the list it belongs to (operation and filters), so
// a forged, malformed or foreign token is refused and a token stays valid on every instance that
// shares the key (it lives in the database).
import { createHmac, timingSafeEqual } from "node:crypto";
import { invalidField } from "./errors.js";

export const PAGE_SIZE_DEFAULT = 25;
export const PAGE_SIZE_MIN = 10;
export const PAGE_SIZE_MAX = 100;

/**
 * Default 25; a value below 10 is treated as 10; a value above 100 as 100, whatever its size (a
 * query integer past a double's range arrives as ±Infinity and clamps too).
 */
export function pageSize(requested: number | undefined | null): number {
  if (requested === undefined || requested === null) return PAGE_SIZE_DEFAULT;
  return Math.min(PAGE_SIZE_MAX, Math.max(PAGE_SIZE_MIN, Math.trunc(requested)));
}

/**
 * The stored characters one page answers at most, for lists whose items may be large (executions:
 * up to about 1.1 MB each, their trigger, steps and step results; audit events: the states before
 * and after): a hundred of them could take over 100 MB to read and serialize for one request. A
 * page stops short of `page_size` instead, and its token continues after the last item served.
 */
export const PAGE_STORED_CHARS_MAX = 8 * 1024 * 1024;

/** How many of `sizes` (in order) one page serves: at most `limit`, at least one, within PAGE_STORED_CHARS_MAX together. */
export function servedWithin(sizes: readonly number[], limit: number): number {
  let total = 0;
  let served = 0;
  for (const size of sizes.slice(0, limit)) {
    total += size;
    if (served > 0 && total > PAGE_STORED_CHARS_MAX) break;
    served++;
  }
  return served;
}

export type SortKey = readonly (string | number)[];

/**
 * The bytes of `text` if it is their one base64url spelling (no padding, no `+` `/`, no whitespace,
 * zero spare bits), else undefined: Node's decoder skips what it does not expect, so without this
 * check `…==` or a re-encoded MAC would pass as the same token.
 */
function canonicalBase64url(text: string | undefined): Buffer | undefined {
  if (text === undefined || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : undefined;
}

export interface Page<T> {
  items: T[];
  nextPageToken: string;
}

export class PageTokens {
  constructor(private readonly key: Buffer) {}

  private mac(scope: string, payload: string): Buffer {
    return createHmac("sha256", this.key).update(scope).update("\0").update(payload).digest();
  }

  /** A token resuming after `key` within the list named by `scope`. */
  encode(scope: string, key: SortKey): string {
    const payload = Buffer.from(JSON.stringify(key)).toString("base64url");
    return `${payload}.${this.mac(scope, payload).toString("base64url")}`;
  }

  /** The sort key a token resumes after, or null for a first page; 400 for anything not ours, or not spelled as we spell it. */
  decode(scope: string, token: string | undefined | null, field: string, arity: number): SortKey | null {
    if (!token) return null;
    const bad = () => invalidField(field, "malformed, forged or foreign page token", "INVALID_PAGE_TOKEN");
    const [payload, mac, extra] = token.split(".");
    const json = canonicalBase64url(payload);
    const given = canonicalBase64url(mac);
    if (!payload || !json || !given || extra !== undefined) throw bad();
    const expected = this.mac(scope, payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw bad();
    let key: unknown;
    try {
      key = JSON.parse(json.toString("utf8"));
    } catch {
      throw bad();
    }
    if (!Array.isArray(key) || key.length !== arity || !key.every((k) => typeof k === "string" || typeof k === "number")) throw bad();
    return key as SortKey;
  }

  /** Cuts a fetch of `size + 1` rows into a page; the extra row only tells that more follow. */
  page<R, T>(scope: string, rows: R[], size: number, sortKey: (row: R) => SortKey, view: (row: R) => T): Page<T> {
    const served = rows.slice(0, size);
    const last = served[served.length - 1];
    return {
      items: served.map(view),
      nextPageToken: rows.length > size && last !== undefined ? this.encode(scope, sortKey(last)) : "",
    };
  }
}
