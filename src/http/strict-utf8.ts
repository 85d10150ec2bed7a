// The body parsers' `verify` hook: a body declared (or defaulted) UTF-8 must be UTF-8. Without it
// the parsers decode invalid bytes to U+FFFD and the request goes on with text the client never
// sent, which then gets stored.
import { isUtf8 } from "node:buffer";
import { invalidArgument } from "../core/errors.js";

export function requireUtf8(_req: unknown, _res: unknown, body: Buffer, encoding: string | null): void {
  if ((encoding ?? "utf-8").toLowerCase() === "utf-8" && !isUtf8(body)) {
    throw invalidArgument("MALFORMED_BODY", "the request body is not valid UTF-8", { violations: [{ field: "body", description: "is not valid UTF-8" }] });
  }
}
