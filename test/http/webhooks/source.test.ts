// Source address restriction through real HTTP on a dual-stack server (HOST "::"): IPv4 ranges
// against the IPv4 loopback peer and its IPv4-mapped form, IPv6 ranges against ::1, and
// X-Forwarded-For honoured only from the proxy TRUST_PROXY names (127.0.0.1/32).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../support/server.js";
import { createHooked, expectAccepted, expectRefused, sendHmac, type Hooked } from "./helpers.js";
import { webhookTrigger } from "../../support/triggers.js";

let ts: TestServer;

beforeAll(async () => {
  ts = await startTestServer({ HOST: "::", TRUST_PROXY: "127.0.0.1/32" });
});
afterAll(async () => ts?.stop());

const V4 = "127.0.0.1";
const MAPPED = "::ffff:127.0.0.1";
const V6 = "::1";

const via = (hook: Hooked, connectTo: string, headers: Record<string, string> = {}) => sendHmac(ts, hook.url, hook.secret, "{}", { connectTo, headers });

describe("CIDR ranges against the peer address", () => {
  it("no range: any source", async () => {
    const open = await createHooked(ts);
    for (const peer of [V4, MAPPED, V6]) expectAccepted(await via(open, peer));
  });

  it("an IPv4 range matches the IPv4 peer and its IPv4-mapped IPv6 form, not ::1", async () => {
    const loopback = await createHooked(ts, { cidrs: ["127.0.0.0/8"] });
    expectAccepted(await via(loopback, V4));
    expectAccepted(await via(loopback, MAPPED));
    expectRefused(await via(loopback, V6), 403, "SOURCE_NOT_ALLOWED");

    const single = await createHooked(ts, { cidrs: ["127.0.0.1/32"] });
    expectAccepted(await via(single, MAPPED));
    const neighbour = await createHooked(ts, { cidrs: ["127.0.0.2/32"] });
    expectRefused(await via(neighbour, V4), 403, "SOURCE_NOT_ALLOWED");
  });

  it("an IPv4 range that does not hold the peer refuses it (403), in both forms", async () => {
    const fenced = await createHooked(ts, { cidrs: ["10.0.0.0/8", "203.0.113.0/24"] });
    expectRefused(await via(fenced, V4), 403, "SOURCE_NOT_ALLOWED");
    expectRefused(await via(fenced, MAPPED), 403, "SOURCE_NOT_ALLOWED");
    expectRefused(await via(fenced, V6), 403, "SOURCE_NOT_ALLOWED");
  });

  it("IPv6 ranges: ::1/128 admits ::1 only; 2001:db8::/32 refuses it", async () => {
    const v6 = await createHooked(ts, { cidrs: ["::1/128"] });
    expectAccepted(await via(v6, V6));
    expectRefused(await via(v6, V4), 403, "SOURCE_NOT_ALLOWED");
    expectRefused(await via(v6, MAPPED), 403, "SOURCE_NOT_ALLOWED");
    const doc = await createHooked(ts, { cidrs: ["2001:db8::/32"] });
    expectRefused(await via(doc, V6), 403, "SOURCE_NOT_ALLOWED");
  });

  it("a mixed list admits each family by its own range", async () => {
    const mixed = await createHooked(ts, { cidrs: ["10.0.0.0/8", "::1/128"] });
    expectAccepted(await via(mixed, V6));
    expectRefused(await via(mixed, V4), 403, "SOURCE_NOT_ALLOWED");
    const both = await createHooked(ts, { cidrs: ["127.0.0.0/8", "::1/128"] });
    for (const peer of [V4, MAPPED, V6]) expectAccepted(await via(both, peer));
  });

  it("an IPv4-mapped range is saved as its IPv4 range and matches the mapped peer", async () => {
    const mappedRange = await createHooked(ts, { cidrs: ["::ffff:127.0.0.0/104"] });
    expect(webhookTrigger(mappedRange.automation)?.allowedSourceCidrs).toEqual(["127.0.0.0/8"]);
    expectAccepted(await via(mappedRange, MAPPED));
    expectAccepted(await via(mappedRange, V4));
    expectRefused(await via(mappedRange, V6), 403, "SOURCE_NOT_ALLOWED");
  });
});

describe("X-Forwarded-For with TRUST_PROXY=127.0.0.1/32", () => {
  it("from the trusted proxy, the forwarded client is the source", async () => {
    const partner = await createHooked(ts, { cidrs: ["203.0.113.0/24"] });
    expectRefused(await via(partner, V4), 403, "SOURCE_NOT_ALLOWED");
    expectAccepted(await via(partner, V4, { "X-Forwarded-For": "203.0.113.7" }));
    expectAccepted(await via(partner, MAPPED, { "X-Forwarded-For": "203.0.113.7" }));
    expectRefused(await via(partner, V4, { "X-Forwarded-For": "198.51.100.1" }), 403, "SOURCE_NOT_ALLOWED");
    // The client's own X-Forwarded-For entry (leftmost) is not believed past an untrusted hop.
    expectRefused(await via(partner, V4, { "X-Forwarded-For": "203.0.113.7, 198.51.100.1" }), 403, "SOURCE_NOT_ALLOWED");
    // A malformed hop leaves the proxy as the source.
    expectRefused(await via(partner, V4, { "X-Forwarded-For": "not-an-address" }), 403, "SOURCE_NOT_ALLOWED");

    const v6partner = await createHooked(ts, { cidrs: ["2001:db8::/32"] });
    expectAccepted(await via(v6partner, V4, { "X-Forwarded-For": "2001:db8::5" }));
  });

  it("from a peer that is not a trusted proxy (::1), X-Forwarded-For is ignored", async () => {
    const partner = await createHooked(ts, { cidrs: ["203.0.113.0/24"] });
    expectRefused(await via(partner, V6, { "X-Forwarded-For": "203.0.113.7" }), 403, "SOURCE_NOT_ALLOWED");
    // Nor can a client behind the proxy hide: a listener fenced to the proxy's range refuses a forwarded outsider.
    const local = await createHooked(ts, { cidrs: ["127.0.0.0/8"] });
    expectRefused(await via(local, V4, { "X-Forwarded-For": "198.51.100.1" }), 403, "SOURCE_NOT_ALLOWED");
    expectAccepted(await via(local, V4, { "X-Forwarded-For": "127.0.0.9" }));
  });
});
