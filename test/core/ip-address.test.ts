// Reading IP addresses (src/core/ip-address.ts): TRUST_PROXY's list, and the client's address behind trusted proxies.
import { describe, expect, it } from "vitest";
import { clientAddress, parseTrustProxy } from "../../src/core/ip-address.js";

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
  interface Case {
    peer: string;
    forwarded: string | string[] | undefined;
    trusted: string[];
    client: string;
  }
  const cases: Array<[string, Case[]]> = [
    [
      "is the socket peer by default, whatever X-Forwarded-For says",
      [
        { peer: "198.51.100.1", forwarded: "203.0.113.5", trusted: [], client: "198.51.100.1" },
        { peer: "::ffff:198.51.100.1", forwarded: "203.0.113.5", trusted: [], client: "198.51.100.1" },
      ],
    ],
    ["ignores X-Forwarded-For from a peer that is not a trusted proxy", [{ peer: "198.51.100.1", forwarded: "203.0.113.5", trusted: proxies, client: "198.51.100.1" }]],
    [
      "honours X-Forwarded-For from a trusted proxy",
      [
        { peer: "10.0.0.2", forwarded: "203.0.113.5", trusted: proxies, client: "203.0.113.5" },
        { peer: "::ffff:127.0.0.1", forwarded: "203.0.113.5", trusted: proxies, client: "203.0.113.5" },
      ],
    ],
    [
      // client 203.0.113.5 claims to be 192.0.2.1; proxy 10.0.0.3 appended what it saw; proxy 10.0.0.2 is the peer.
      "walks from the right through trusted hops only: a spoofed leftmost entry is not believed",
      [
        { peer: "10.0.0.2", forwarded: "192.0.2.1, 203.0.113.5, 10.0.0.3", trusted: proxies, client: "203.0.113.5" },
        { peer: "10.0.0.2", forwarded: ["192.0.2.1, 203.0.113.5", "10.0.0.3"], trusted: proxies, client: "203.0.113.5" },
      ],
    ],
    ["is the leftmost address when every hop is trusted", [{ peer: "10.0.0.2", forwarded: "10.0.0.9, 10.0.0.3", trusted: proxies, client: "10.0.0.9" }]],
    [
      "stops at the last trusted proxy on a malformed hop",
      [
        { peer: "10.0.0.2", forwarded: "203.0.113.5, not-an-ip", trusted: proxies, client: "10.0.0.2" },
        { peer: "10.0.0.2", forwarded: "203.0.113.5:4711", trusted: proxies, client: "10.0.0.2" },
      ],
    ],
    [
      "handles IPv6 hops and an empty header",
      [
        { peer: "10.0.0.2", forwarded: "2001:db8::7", trusted: proxies, client: "2001:db8::7" },
        { peer: "10.0.0.2", forwarded: "", trusted: proxies, client: "10.0.0.2" },
        { peer: "10.0.0.2", forwarded: undefined, trusted: proxies, client: "10.0.0.2" },
      ],
    ],
  ];
  for (const [rule, list] of cases) {
    it(rule, () => {
      expect(list.map(({ peer, forwarded, trusted }) => clientAddress(peer, forwarded, trusted))).toEqual(list.map((c) => c.client));
    });
  }
});
