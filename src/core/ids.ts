// Random identifiers and secrets from the system CSPRNG.
import { randomBytes, randomInt } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` characters of [0-9A-Za-z], uniformly drawn. */
export function base62(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/** A 256-bit secret as 43 characters of base64url without padding. */
export function secret256(): string {
  return randomBytes(32).toString("base64url");
}

export const newId = (): string => base62(16);
