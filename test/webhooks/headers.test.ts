import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { checkContentType, parseEventId, parseTimestamp, parseWebhookHeaders, type HeaderBag } from "../../src/webhooks/headers.js";
import { caught, expectApiError } from "./helpers.js";

const NOW = 1_763_773_200; // seconds
const clock = new ManualClock(NOW * 1000);
const EVENT_ID = "9f1c2b7e-4d3a-4e5f-8a6b-7c8d9e0f1a2b";

const headers = (over: Record<string, string | string[] | undefined> = {}): HeaderBag => ({
  "content-type": "application/json",
  "webhook-timestamp": String(NOW),
  "webhook-event-id": EVENT_ID,
  ...over,
});

function expect400(fn: () => unknown, reason: string, field: string) {
  const e = expectApiError(caught(fn), 400, reason);
  expect(e.violations.map((v) => v.field)).toEqual([field]);
  return e;
}

describe("parseWebhookHeaders", () => {
  it("accepts valid headers and returns the timestamp and event id as received plus the lowercase id", () => {
    expect(parseWebhookHeaders(headers(), clock)).toEqual({ timestamp: String(NOW), eventId: EVENT_ID, eventIdRaw: EVENT_ID });
  });

  it("accepts an uppercase UUID, normalizes the id to lowercase and keeps the raw one for the HMAC", () => {
    const upper = EVENT_ID.toUpperCase();
    expect(parseWebhookHeaders(headers({ "webhook-event-id": upper }), clock)).toEqual({ timestamp: String(NOW), eventId: EVENT_ID, eventIdRaw: upper });
  });

  it("finds headers whatever the case of their names", () => {
    const bag = { "Content-Type": "application/json", "Webhook-Timestamp": String(NOW), "WEBHOOK-EVENT-ID": EVENT_ID };
    expect(parseWebhookHeaders(bag, clock).eventId).toBe(EVENT_ID);
  });

  it.each([
    ["content-type", "headers.Content-Type"],
    ["webhook-timestamp", "headers.Webhook-Timestamp"],
    ["webhook-event-id", "headers.Webhook-Event-Id"],
  ])("refuses a missing %s with 400 MISSING_HEADER", (name, field) => {
    expect400(() => parseWebhookHeaders(headers({ [name]: undefined }), clock), "MISSING_HEADER", field);
    expect400(() => parseWebhookHeaders(headers({ [name]: "" }), clock), "MISSING_HEADER", field);
  });

  it("refuses a repeated header", () => {
    expect400(() => parseWebhookHeaders(headers({ "webhook-event-id": [EVENT_ID, EVENT_ID] }), clock), "INVALID_HEADER", "headers.Webhook-Event-Id");
  });

  it("refuses a charset other than utf-8 and a Content-Encoding other than identity with 415, after the media type", () => {
    for (const over of [{ "content-type": "application/json; charset=utf-16" }, { "content-type": 'application/json;charset="latin1"' }, { "content-encoding": "gzip" }, { "content-encoding": ["identity", "identity"] }]) {
      expectApiError(caught(() => parseWebhookHeaders(headers(over), clock)), 415, "UNSUPPORTED_MEDIA_TYPE");
    }
    for (const over of [{ "content-type": "application/json; charset=UTF-8" }, { "content-type": 'application/json; charset="utf-8"' }, { "content-encoding": "Identity" }, { "content-encoding": "" }]) {
      expect(parseWebhookHeaders(headers(over), clock).eventId).toBe(EVENT_ID);
    }
    expect400(() => parseWebhookHeaders(headers({ "content-type": "text/plain; charset=utf-16" }), clock), "UNSUPPORTED_CONTENT_TYPE", "headers.Content-Type");
  });

  it("checks Content-Type first, then the timestamp, then the event id", () => {
    expect400(() => parseWebhookHeaders({ "content-type": "text/plain" }, clock), "UNSUPPORTED_CONTENT_TYPE", "headers.Content-Type");
    expect400(() => parseWebhookHeaders(headers({ "webhook-timestamp": "x", "webhook-event-id": "y" }), clock), "INVALID_TIMESTAMP", "headers.Webhook-Timestamp");
  });
});

describe("checkContentType", () => {
  it.each(["application/json", "application/json; charset=utf-8", "Application/JSON", "APPLICATION/JSON;charset=UTF-8", "application/json ; charset=utf-8"])(
    "accepts %j",
    (value) => {
      expect(() => checkContentType(value)).not.toThrow();
    },
  );

  it.each(["text/plain", "application/jsonp", "application/json-seq", "application/problem+json", "application/x-www-form-urlencoded", "json", "application/json, text/plain"])(
    "refuses %j with 400 UNSUPPORTED_CONTENT_TYPE",
    (value) => {
      expect400(() => checkContentType(value), "UNSUPPORTED_CONTENT_TYPE", "headers.Content-Type");
    },
  );
});

describe("parseTimestamp", () => {
  it.each([0, 1, 299, 300, -1, -299, -300])("accepts a timestamp %i s from the clock", (offset) => {
    expect(parseTimestamp(String(NOW + offset), clock)).toBe(String(NOW + offset));
  });

  it.each([301, -301, 3600, -NOW])("refuses a timestamp %i s from the clock with TIMESTAMP_OUT_OF_WINDOW", (offset) => {
    expect400(() => parseTimestamp(String(NOW + offset), clock), "TIMESTAMP_OUT_OF_WINDOW", "headers.Webhook-Timestamp");
  });

  it("measures against the clock's whole seconds", () => {
    const c = new ManualClock(NOW * 1000 + 999);
    expect(parseTimestamp(String(NOW + 300), c)).toBe(String(NOW + 300));
    expect(parseTimestamp(String(NOW - 300), c)).toBe(String(NOW - 300));
  });

  it("refuses the largest 19-digit value as out of window without losing precision", () => {
    expect400(() => parseTimestamp("9999999999999999999", clock), "TIMESTAMP_OUT_OF_WINDOW", "headers.Webhook-Timestamp");
  });

  it.each(["+1763773200", "-1763773200", " 1763773200", "1763773200 ", "1763773200.0", "1.7637732e9", "0x6920", "abc", "1763773200000000000000", "１７６３７７３２００"])(
    "refuses %j with INVALID_TIMESTAMP",
    (value) => {
      expect400(() => parseTimestamp(value, clock), "INVALID_TIMESTAMP", "headers.Webhook-Timestamp");
    },
  );

  it("accepts leading zeros (a plain decimal string) and returns the value unchanged", () => {
    expect(parseTimestamp(`000${NOW}`, clock)).toBe(`000${NOW}`);
  });
});

describe("parseEventId", () => {
  it("accepts each v4 variant nibble 8, 9, a, b", () => {
    for (const v of ["8", "9", "a", "b", "A", "B"]) {
      expect(parseEventId(`9f1c2b7e-4d3a-4e5f-${v}a6b-7c8d9e0f1a2b`).eventId).toBe(`9f1c2b7e-4d3a-4e5f-${v.toLowerCase()}a6b-7c8d9e0f1a2b`);
    }
  });

  it.each([
    ["v1", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"],
    ["v7", "01890a5d-ac96-774b-bcce-b302099a8057"],
    ["v3", "6fa459ea-ee8a-3ca4-894e-db77e160355e"],
    ["v5", "886313e1-3b8a-5372-9b90-0c9aee199e5d"],
    ["nil", "00000000-0000-0000-0000-000000000000"],
    ["v4 with variant c (Microsoft)", "9f1c2b7e-4d3a-4e5f-ca6b-7c8d9e0f1a2b"],
    ["v4 with variant 7 (NCS)", "9f1c2b7e-4d3a-4e5f-7a6b-7c8d9e0f1a2b"],
    ["no hyphens", "9f1c2b7e4d3a4e5f8a6b7c8d9e0f1a2b"],
    ["braces", "{9f1c2b7e-4d3a-4e5f-8a6b-7c8d9e0f1a2b}"],
    ["urn", "urn:uuid:9f1c2b7e-4d3a-4e5f-8a6b-7c8d9e0f1a2b"],
    ["trailing space", "9f1c2b7e-4d3a-4e5f-8a6b-7c8d9e0f1a2b "],
    ["non-hex", "9f1c2b7e-4d3a-4e5f-8a6b-7c8d9e0f1a2g"],
    ["too long", "9f1c2b7e-4d3a-4e5f-8a6b-7c8d9e0f1a2b0"],
  ])("refuses %s with INVALID_EVENT_ID", (_name, value) => {
    expect400(() => parseEventId(value), "INVALID_EVENT_ID", "headers.Webhook-Event-Id");
  });

  it("does not echo the value in the message", () => {
    const e = expect400(() => parseEventId("secret-looking-value"), "INVALID_EVENT_ID", "headers.Webhook-Event-Id");
    expect(e.message).not.toContain("secret-looking-value");
  });
});
