// The floor's check of a signed webhook delivery (issue 33): what any correct intake must do
// before it stores an event, the same check as the server's (src/webhooks/hmac.ts, headers.ts):
// a fresh timestamp, a UUID v4 event id, and the HMAC-SHA256 of `<timestamp>.<event id>.<body>`
// under the listener's secret, compared in constant time.
import { createHmac, timingSafeEqual } from "node:crypto";

const TOLERANCE_SECONDS = 300;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The delivery's event id when it is signed by `secret` within the tolerance of `nowSeconds`, else undefined. */
export function verifiedEventId(headers: { timestamp?: string; eventId?: string; signature?: string }, body: Buffer, secret: string, nowSeconds: number): string | undefined {
  const { timestamp, eventId, signature } = headers;
  if (!timestamp || !eventId || !signature || !/^\d{1,12}$/.test(timestamp) || !UUID_V4.test(eventId)) return undefined;
  if (Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) return undefined;
  const expected = createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.${eventId}.`).update(body).digest();
  const given = Buffer.from(signature, "base64url");
  return given.length === expected.length && timingSafeEqual(given, expected) ? eventId : undefined;
}
