// The inbound webhook body: any JSON value (an object, an array, a bare number, a string, true,
// false, null), by the one rule of JSON bodies (core/json-body: UTF-8, no byte order mark, nesting),
// with numbers a double can hold: the payload is kept as received. And its `htb_s256`, the body hash
// a JWT sender puts in its token.
import { createHash } from "node:crypto";
import { invalidArgument, invalidField } from "../core/errors.js";
import { checkJsonBytes } from "../core/json-body.js";
import { firstUnstorable } from "../core/storable-value.js";

/** The body's JSON value; 400 for bytes core/json-body refuses, invalid JSON, or a number past the range of a double. */
export function parseJsonBody(rawBody: Uint8Array): unknown {
  checkJsonBytes(rawBody);
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength).toString("utf8"));
  } catch {
    throw invalidArgument("MALFORMED_BODY", "the request body is not valid JSON", { violations: [{ field: "body", description: "is not valid JSON" }] });
  }
  // Kept as JSON text, which holds any string as received; a number past a double's range would become null.
  const found = firstUnstorable(value, "body", false);
  if (found) throw invalidField(found.path, found.problem);
  return value;
}

/** `htb_s256`: base64url (no padding) of the SHA-256 of the raw body bytes. */
export function htbS256(rawBody: Uint8Array): string {
  return createHash("sha256").update(rawBody).digest("base64url");
}
