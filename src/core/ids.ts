// Random identifiers and secrets from the system CSPRNG.
import { randomBytes, randomInt } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` characters of [0-9A-Za-z], uniformly drawn. */
export function base62(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/**
 * 8 characters of base62 for the millisecond `ms` (sorting as the time does, until the year 8888)
 * then `randomLength` random ones. Rows keyed by such ids are appended at the end of their primary
 * key's index instead of at random places in it, so a commit writes fewer pages.
 */
export function timeOrderedId(ms: number, randomLength: number): string {
  return timeOrderedPrefix(ms) + base62(randomLength);
}

/**
 * The 8 characters that begin every time-ordered id of the millisecond `ms`: ids made at or after
 * `ms` sort at or after it, ids made before it sort before it, so a range of instants is a range of ids.
 */
export function timeOrderedPrefix(ms: number): string {
  let time = "";
  for (let rest = Math.floor(ms), i = 0; i < 8; i++, rest = Math.floor(rest / 62)) time = BASE62[rest % 62] + time;
  return time;
}

/** A 256-bit secret as 43 characters of base64url without padding. */
export function secret256(): string {
  return randomBytes(32).toString("base64url");
}

export const newId = (): string => base62(16);

/** Ids in the API's paths (contract parameters UserId, AppId, ListenerId): 1 to 128 of [A-Za-z0-9._:-], from a letter or digit. */
const PATH_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export const isPathId = (value: string): boolean => PATH_ID.test(value);
