import { describe, expect, it } from "vitest";
import { clientAddress, parseCidr } from "../../src/core/ip-address.js";
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
  interface Case {
    ranges: string[];
    peer: string | undefined;
    allowed: boolean;
  }
  const cases: Array<[string, Case[]]> = [
    ["allows any source when the list is empty", [{ ranges: [], peer: "198.51.100.1", allowed: true }, { ranges: [], peer: undefined, allowed: true }]],
    [
      "IPv4: inside allowed, outside refused",
      [
        { ranges: v4, peer: "203.0.113.200", allowed: true },
        { ranges: v4, peer: "127.0.0.1", allowed: true },
        { ranges: v4, peer: "203.0.114.1", allowed: false },
        { ranges: v4, peer: "127.0.0.2", allowed: false },
      ],
    ],
    [
      "IPv6: inside allowed, outside refused, any notation",
      [
        { ranges: v6, peer: "2001:db8:1::5", allowed: true },
        { ranges: v6, peer: "2001:0DB8:0001:ffff:0:0:0:1", allowed: true },
        { ranges: v6, peer: "2001:db8:2::5", allowed: false },
        { ranges: v6, peer: "203.0.113.5", allowed: false },
      ],
    ],
    [
      "IPv4-mapped IPv6 peers match IPv4 ranges",
      [
        { ranges: v4, peer: "::ffff:127.0.0.1", allowed: true },
        { ranges: v4, peer: "::ffff:203.0.113.9", allowed: true },
        { ranges: v4, peer: "::FFFF:cb00:7109", allowed: true },
        { ranges: v4, peer: "::ffff:198.51.100.1", allowed: false },
        { ranges: ["10.0.0.0/8"], peer: "::ffff:127.0.0.1", allowed: false },
      ],
    ],
    [
      "IPv4 ranges do not match IPv6 peers that merely embed the address",
      [
        { ranges: ["127.0.0.0/8"], peer: "::127.0.0.1", allowed: false },
        { ranges: ["127.0.0.0/8"], peer: "64:ff9b::7f00:1", allowed: false },
      ],
    ],
    ["an IPv6 peer with a zone id still matches", [{ ranges: ["fe80::/10"], peer: "fe80::1%eth0", allowed: true }]],
    [
      "refuses an unknown or unparseable peer when restricted",
      [
        { ranges: v4, peer: undefined, allowed: false },
        { ranges: v4, peer: "", allowed: false },
        { ranges: v4, peer: "localhost", allowed: false },
      ],
    ],
    ["ignores a stored entry that does not parse (fails closed)", [{ ranges: ["garbage"], peer: "203.0.113.1", allowed: false }]],
  ];
  for (const [rule, list] of cases) {
    it(rule, () => {
      expect(list.map(({ ranges, peer }) => isAllowed(ranges, peer))).toEqual(list.map((c) => c.allowed));
    });
  }

  it("combined with clientAddress: a spoofed X-Forwarded-For does not get a request past the CIDR list", () => {
    const allowed = ["203.0.113.0/24"];
    const proxies = ["10.0.0.0/8", "127.0.0.1/32"];
    expect(isAllowed(allowed, clientAddress("198.51.100.1", "203.0.113.5", proxies))).toBe(false);
    expect(isAllowed(allowed, clientAddress("10.0.0.2", "203.0.113.5", proxies))).toBe(true);
  });
});
