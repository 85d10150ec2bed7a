// The inbound webhook body: any JSON value (an object, an array, a bare number, a string, true,
// false, null), as strict UTF-8. And its `htb_s256`, the body hash a JWT sender puts in its token.
import { createHash } from "node:crypto";
import { invalidArgument } from "../core/errors.js";

export interface ParseBodyOptions {
  /**
   * Deepest nesting of arrays and objects accepted. JSON.parse copes with any depth, but what runs
   * next (JSON.stringify, structuredClone, CEL) recurses and overflows the stack on a 64 KB body of
   * `[[[[...`. Default 128.
   */
  maxDepth?: number;
}

export const MAX_JSON_DEPTH = 128;

const malformed = (why: string) => invalidArgument("MALFORMED_BODY", `the request body ${why}`, { violations: [{ field: "body", description: why }] });

// fatal: invalid UTF-8 throws instead of becoming U+FFFD. ignoreBOM: a leading BOM is kept, so
// JSON.parse refuses it (RFC 8259: JSON text is sent without one).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Nesting depth of a text already known to be valid JSON. */
function depthOf(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** The body's JSON value; 400 MALFORMED_BODY for invalid UTF-8, invalid JSON or excessive nesting. */
export function parseJsonBody(rawBody: Uint8Array, options: ParseBodyOptions = {}): unknown {
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  let text: string;
  try {
    text = utf8.decode(rawBody);
  } catch {
    throw malformed("is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed("is not valid JSON");
  }
  if (depthOf(text, maxDepth) > maxDepth) throw malformed(`nests arrays and objects deeper than ${maxDepth} levels`);
  return value;
}

/** `htb_s256`: base64url (no padding) of the SHA-256 of the raw body bytes. */
export function htbS256(rawBody: Uint8Array): string {
  return createHash("sha256").update(rawBody).digest("base64url");
}
