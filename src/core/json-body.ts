// The one rule for a JSON request body, on the API and the webhook intake alike, checked on its
// headers and bytes before it is parsed. Sent as is: no Content-Encoding (a compressed body is never
// decompressed; the intake signs the bytes as received). UTF-8: a `charset` parameter, if any, is
// `utf-8`; the bytes are valid UTF-8 and do not begin with a byte order mark (RFC 8259 8.1: senders
// must not add one; a parser that skipped it would read, and the intake sign, bytes other than the
// JSON text). Nested at most MAX_JSON_DEPTH.
import { isUtf8 } from "node:buffer";
import { ApiError, GrpcCode, invalidArgument } from "./errors.js";
import { checkJsonDepth } from "./json-depth.js";

/** 415 for a body in an encoding or charset no operation takes. */
export const unsupportedBodyEncoding = (): ApiError =>
  new ApiError(415, GrpcCode.INVALID_ARGUMENT, "UNSUPPORTED_MEDIA_TYPE", "unsupported request body encoding");

// A `charset` parameter of a media type, its value quoted or not.
const CHARSET = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i;

/** 415 unless the body is sent as is: no Content-Encoding, or `identity`. */
export function checkContentEncoding(value: string | undefined): void {
  if (value !== undefined && value.trim() !== "" && value.trim().toLowerCase() !== "identity") throw unsupportedBodyEncoding();
}

/** 415 unless the media type `contentType` has no charset or charset `utf-8` (any case). */
export function checkJsonCharset(contentType: string | undefined): void {
  const m = CHARSET.exec(contentType ?? "");
  if (m && (m[1] ?? m[2] ?? "").toLowerCase() !== "utf-8") throw unsupportedBodyEncoding();
}

/** 400 MALFORMED_BODY: the request body `why` (`is not valid UTF-8`). */
export const malformedBody = (why: string) => invalidArgument("MALFORMED_BODY", `the request body ${why}`, { violations: [{ field: "body", description: why }] });

/** 400 MALFORMED_BODY for a byte order mark, bytes that are not UTF-8, or nesting deeper than MAX_JSON_DEPTH. */
export function checkJsonBytes(bytes: Uint8Array): void {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) throw malformedBody("begins with a byte order mark");
  if (!isUtf8(bytes)) throw malformedBody("is not valid UTF-8");
  checkJsonDepth(bytes);
}
