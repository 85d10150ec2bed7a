// How deep a JSON text nests arrays and objects. JSON.parse copes with any depth, but what runs next
// (JSON.stringify, structuredClone, CEL, a validator) recurses and overflows the stack on a body of
// `[[[[...`: every JSON input is held to one depth, counted on its bytes before anything recurses.
import { invalidArgument } from "./errors.js";

/** The deepest nesting of arrays and objects any JSON input may have. */
export const MAX_JSON_DEPTH = 128;

// The bytes that matter are ASCII, and no byte of a multi-byte UTF-8 sequence is ASCII.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPENERS = new Set([0x5b, 0x7b]);
const CLOSERS = new Set([0x5d, 0x7d]);

/** Whether the JSON bytes nest arrays and objects deeper than `limit` (strings are skipped). */
export function nestsDeeperThan(bytes: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (OPENERS.has(c)) {
      if (++depth > limit) return true;
    } else if (CLOSERS.has(c)) depth--;
  }
  return false;
}

/** 400 MALFORMED_BODY for a body nested deeper than MAX_JSON_DEPTH. */
export function checkJsonDepth(bytes: Uint8Array): void {
  if (nestsDeeperThan(bytes, MAX_JSON_DEPTH)) {
    const why = `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`;
    throw invalidArgument("MALFORMED_BODY", `the request body ${why}`, { violations: [{ field: "body", description: why }] });
  }
}
