// Shape checks for untyped request input. The contract validator runs first over HTTP, but the
// domain refuses bad values itself so no caller can store a shape the rules forbid.
import { invalidField } from "../core/errors.js";
import { isFieldText, textLength, UNFIT_FIELD_TEXT } from "../core/storable-text.js";

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A field that is absent or null is not set (proto3 JSON: null means the default). */
export const isSet = (v: unknown): boolean => v !== undefined && v !== null;

/** An object, or a 400 naming the field. */
export function requireRecord(input: unknown, path: string): Record<string, unknown> {
  if (!isRecord(input)) throw invalidField(path, "must be an object");
  return input;
}

/** The contract's bound on free-text reasons. */
const MAX_REASON_LENGTH = 500;

/**
 * An optional free-text reason: absent/null is undefined, otherwise text a text field may hold
 * (core/storable-text) of at most 500 characters (code points, as the contract counts). Every writer
 * of a reason comes through here, the API and automation steps alike.
 */
export function parseReason(input: unknown, path: string): string | undefined {
  if (!isSet(input)) return undefined;
  if (typeof input !== "string") throw invalidField(path, "must be a string");
  if (!isFieldText(input)) throw invalidField(path, UNFIT_FIELD_TEXT);
  if (textLength(input) > MAX_REASON_LENGTH) throw invalidField(path, `must be at most ${MAX_REASON_LENGTH} characters`);
  return input;
}
