import { describe, expect, it } from "vitest";
import { clientAddress, parseCidr, parseTrustProxy } from "../../src/core/ip-address.js";
import { isAllowed, parseCidrs } from "../../src/webhooks/source-ip.js";
import { caught, expectApiError } from "./helpers.js";

describe("parseCidrs (save time)", () => {
  it("accepts IPv4 and IPv6 ranges and returns them canonical", () => {
    expect(parseCidrs(["203.0.113.0/24", "2001:DB8:0:0::/32", "198.51.100.7/32", "::1/128", "0.0.0.0/0", "::/0", "::ffff:10.0.0.0/104"])).toEqual([
      "203.0.113.0/24",
      "2001:db8::/32",
      "198.51.100.7/32",
      "::1/128",
      "0.0.0.0/0",
      "::/0",
      "10.0.0.0/8",
    ]);
  });

  it.each([
    [["203.0.113.0/24", "nope"], 1],
    [["203.0.113.7"], 0],
    [["203.0.113.0/33"], 0],
    [["2001:db8::/129"], 0],
    [["203.0.113.0/-1"], 0],
    [["203.0.113.0/"], 0],
    [["203.0.113.0/24/1"], 0],
    [["203.0.113.7/24"], 0],
    [["0x7f.1/32"], 0],
    [["127.1/32"], 0],
    [["010.0.0.0/8"], 0],
    [[" 10.0.0.0/8"], 0],
    [["fe80::1%eth0/128"], 0],
    [["[::1]/128"], 0],
    [["10.0.0.0/8", 42], 1],
    [["10.0.0.0/8", "10.0.0.0/8", "a".repeat(50)], 2],
  ])("refuses %j with 400 naming index %i", (list, index) => {
    const e = expectApiError(caught(() => parseCidrs(list, "body.trigger.allowedSourceCidrs")), 400, "INVALID_CIDR");
    expect(e.violations.map((v) => v.field)).toEqual([`body.trigger.allowedSourceCidrs[${index}]`]);
  });

  it("refuses more than 50 ranges", () => {
    expectApiError(caught(() => parseCidrs(Array.from({ length: 51 }, () => "10.0.0.0/8"))), 400, "INVALID_CIDR");
  });

  it("says which range was meant when host bits are set", () => {
    expect(parseCidr("203.0.113.7/24")).toEqual({ error: "has host bits set; the range is 203.0.113.0/24" });
  });
});

describe("isAllowed", () => {
  const v4 = ["203.0.113.0/24", "127.0.0.1/32"];
  const v6 = ["2001:db8:1::/48"];

  it("allows any source when the list is empty", () => {
    expect(isAllowed([], "198.51.100.1")).toBe(true);
    expect(isAllowed([], undefined)).toBe(true);
  });

  it("IPv4: inside allowed, outside refused", () => {
    expect(isAllowed(v4, "203.0.113.200")).toBe(true);
    expect(isAllowed(v4, "127.0.0.1")).toBe(true);
    expect(isAllowed(v4, "203.0.114.1")).toBe(false);
    expect(isAllowed(v4, "127.0.0.2")).toBe(false);
  });

  it("IPv6: inside allowed, outside refused, any notation", () => {
    expect(isAllowed(v6, "2001:db8:1::5")).toBe(true);
    expect(isAllowed(v6, "2001:0DB8:0001:ffff:0:0:0:1")).toBe(true);
    expect(isAllowed(v6, "2001:db8:2::5")).toBe(false);
    expect(isAllowed(v6, "203.0.113.5")).toBe(false);
  });

  it("IPv4-mapped IPv6 peers match IPv4 ranges", () => {
    expect(isAllowed(v4, "::ffff:127.0.0.1")).toBe(true);
    expect(isAllowed(v4, "::ffff:203.0.113.9")).toBe(true);
    expect(isAllowed(v4, "::FFFF:cb00:7109")).toBe(true);
    expect(isAllowed(v4, "::ffff:198.51.100.1")).toBe(false);
    expect(isAllowed(["10.0.0.0/8"], "::ffff:127.0.0.1")).toBe(false);
  });

  it("IPv4 ranges do not match IPv6 peers that merely embed the address", () => {
    expect(isAllowed(["127.0.0.0/8"], "::127.0.0.1")).toBe(false);
    expect(isAllowed(["127.0.0.0/8"], "64:ff9b::7f00:1")).toBe(false);
  });

  it("an IPv6 peer with a zone id still matches", () => {
    expect(isAllowed(["fe80::/10"], "fe80::1%eth0")).toBe(true);
  });

  it("refuses an unknown or unparseable peer when restricted", () => {
    expect(isAllowed(v4, undefined)).toBe(false);
    expect(isAllowed(v4, "")).toBe(false);
    expect(isAllowed(v4, "localhost")).toBe(false);
  });

  it("ignores a stored entry that does not parse (fails closed)", () => {
    expect(isAllowed(["garbage"], "203.0.113.1")).toBe(false);
  });
});

describe("parseTrustProxy", () => {
  it("reads comma-separated ranges and single addresses; unset is none", () => {
    expect(parseTrustProxy(undefined)).toEqual([]);
    expect(parseTrustProxy("")).toEqual([]);
    expect(parseTrustProxy("10.0.0.0/8, 127.0.0.1 ,::1,fd00::/8")).toEqual(["10.0.0.0/8", "127.0.0.1/32", "::1/128", "fd00::/8"]);
  });

  it("throws naming the bad entry", () => {
    expect(() => parseTrustProxy("10.0.0.0/8,bogus")).toThrow(/entry 2/);
    expect(() => parseTrustProxy("10.0.0.0/8,")).toThrow(/entry 2/);
  });
});

describe("clientAddress", () => {
  const proxies = ["10.0.0.0/8", "127.0.0.1/32"];

  it("is the socket peer by default, whatever X-Forwarded-For says", () => {
    expect(clientAddress("198.51.100.1", "203.0.113.5", [])).toBe("198.51.100.1");
    expect(clientAddress("::ffff:198.51.100.1", "203.0.113.5", [])).toBe("198.51.100.1");
  });

  it("ignores X-Forwarded-For from a peer that is not a trusted proxy", () => {
    expect(clientAddress("198.51.100.1", "203.0.113.5", proxies)).toBe("198.51.100.1");
  });

  it("honours X-Forwarded-For from a trusted proxy", () => {
    expect(clientAddress("10.0.0.2", "203.0.113.5", proxies)).toBe("203.0.113.5");
    expect(clientAddress("::ffff:127.0.0.1", "203.0.113.5", proxies)).toBe("203.0.113.5");
  });

  it("walks from the right through trusted hops only: a spoofed leftmost entry is not believed", () => {
    // client 203.0.113.5 claims to be 192.0.2.1; proxy 10.0.0.3 appended what it saw; proxy 10.0.0.2 is the peer.
    expect(clientAddress("10.0.0.2", "192.0.2.1, 203.0.113.5, 10.0.0.3", proxies)).toBe("203.0.113.5");
    expect(clientAddress("10.0.0.2", ["192.0.2.1, 203.0.113.5", "10.0.0.3"], proxies)).toBe("203.0.113.5");
  });

  it("is the leftmost address when every hop is trusted", () => {
    expect(clientAddress("10.0.0.2", "10.0.0.9, 10.0.0.3", proxies)).toBe("10.0.0.9");
  });

  it("stops at the last trusted proxy on a malformed hop", () => {
    expect(clientAddress("10.0.0.2", "203.0.113.5, not-an-ip", proxies)).toBe("10.0.0.2");
    expect(clientAddress("10.0.0.2", "203.0.113.5:4711", proxies)).toBe("10.0.0.2");
  });

  it("handles IPv6 hops and an empty header", () => {
    expect(clientAddress("10.0.0.2", "2001:db8::7", proxies)).toBe("2001:db8::7");
    expect(clientAddress("10.0.0.2", "", proxies)).toBe("10.0.0.2");
    expect(clientAddress("10.0.0.2", undefined, proxies)).toBe("10.0.0.2");
  });

  it("combined with isAllowed: a spoofed X-Forwarded-For does not get a request past the CIDR list", () => {
    const allowed = ["203.0.113.0/24"];
    expect(isAllowed(allowed, clientAddress("198.51.100.1", "203.0.113.5", proxies))).toBe(false);
    expect(isAllowed(allowed, clientAddress("10.0.0.2", "203.0.113.5", proxies))).toBe(true);
  });
});
