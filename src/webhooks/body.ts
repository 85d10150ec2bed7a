// The inbound webhook body: any JSON value (an object, an array, a bare number, a string, true,
// false, null), as strict UTF-8. And its `htb_s256`, the body hash a JWT sender puts in its token.
import { createHash } from "node:crypto";
import { invalidArgument } from "../core/errors.js";
import { checkJsonDepth } from "../core/json-depth.js";

const malformed = (why: string) => invalidArgument("MALFORMED_BODY", `the request body ${why}`, { violations: [{ field: "body", description: why }] });

// fatal: invalid UTF-8 throws instead of becoming U+FFFD. ignoreBOM: a leading BOM is kept, so
// JSON.parse refuses it (RFC 8259: JSON text is sent without one).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The body's JSON value; 400 MALFORMED_BODY for invalid UTF-8, invalid JSON or excessive nesting. */
export function parseJsonBody(rawBody: Uint8Array): unknown {
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
  checkJsonDepth(rawBody);
  return value;
}

/** `htb_s256`: base64url (no padding) of the SHA-256 of the raw body bytes. */
export function htbS256(rawBody: Uint8Array): string {
  return createHash("sha256").update(rawBody).digest("base64url");
}
