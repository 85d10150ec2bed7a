import type { LookupAddress } from "node:dns";
import { once } from "node:events";
import net from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkJwksUrl, fetchJwks, guardedLookup, JwksFetchError, parseJwksDocument, parseJwksUrl } from "../../src/webhooks/jwks-fetch.js";
import { isOutboundAddressAllowed } from "../../src/webhooks/outbound-address.js";
import { caught, expectApiError, rejection, serveJson, TestServer } from "./helpers.js";

const JWKS = { keys: [{ kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", kid: "k1" }] };

async function fetchError(promise: Promise<unknown>, code: JwksFetchError["code"]): Promise<JwksFetchError> {
  const e = await rejection(promise);
  expect(e).toBeInstanceOf(JwksFetchError);
  expect((e as JwksFetchError).code).toBe(code);
  return e as JwksFetchError;
}

/** A TCP listener that counts connections: proves that a refused fetch never connected. */
async function connectionCounter(): Promise<{ port: number; count: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    connections++;
    sockets.add(s);
    s.destroy();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    port: (server.address() as net.AddressInfo).port,
    count: () => connections,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe("isOutboundAddressAllowed", () => {
  it.each([
    "127.0.0.1",
    "127.1.2.3",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "169.254.0.1",
    "100.64.0.1",
    "100.100.100.200",
    "0.0.0.0",
    "255.255.255.255",
    "224.0.0.1",
    "240.0.0.1",
    "192.0.0.192",
    "168.63.129.16",
    "::1",
    "::",
    "fe80::1",
    "fe80::1%eth0",
    "fc00::1",
    "fd00:ec2::254",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::127.0.0.1",
    "64:ff9b::7f00:1",
    "2002:7f00:1::",
    "2001::1",
    "2001:db8::1",
    "not-an-ip",
    "0x7f.1",
    "127.1",
    "",
  ])("refuses %j", (address) => {
    expect(isOutboundAddressAllowed(address)).toBe(false);
  });

  it.each(["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "[2606:4700:4700::1111]"])("allows the global unicast %j", (address) => {
    expect(isOutboundAddressAllowed(address)).toBe(true);
  });

  it("exemptAddresses allows exactly the addresses it names (in any notation), and no other", () => {
    const policy = { exemptAddresses: ["127.0.0.2"] };
    expect(isOutboundAddressAllowed("127.0.0.2", policy)).toBe(true);
    expect(isOutboundAddressAllowed("::ffff:127.0.0.2", policy)).toBe(true);
    for (const other of ["127.0.0.1", "127.0.0.3", "10.0.0.1", "169.254.169.254", "::1"]) expect(isOutboundAddressAllowed(other, policy)).toBe(false);
  });

  it("allowInsecure allows loopback and private addresses, never metadata, link-local, multicast or unspecified", () => {
    const insecure = { allowInsecure: true };
    for (const a of ["127.0.0.1", "::1", "10.1.2.3", "192.168.0.10", "172.20.0.2", "fd12:3456::1", "::ffff:127.0.0.1"]) {
      expect(isOutboundAddressAllowed(a, insecure), a).toBe(true);
    }
    for (const a of ["169.254.169.254", "fd00:ec2::254", "fd20:ce::254", "100.100.100.200", "168.63.129.16", "169.254.1.1", "fe80::1", "0.0.0.0", "::", "224.0.0.1", "255.255.255.255"]) {
      expect(isOutboundAddressAllowed(a, insecure), a).toBe(false);
    }
  });
});

describe("parseJwksUrl and checkJwksUrl", () => {
  it("accepts an https URL and drops the fragment", () => {
    expect(parseJwksUrl("https://issuer.example/.well-known/jwks.json#x").toString()).toBe("https://issuer.example/.well-known/jwks.json");
  });

  it.each([
    ["http without allowInsecure", "http://issuer.example/jwks.json", "INSECURE_URL"],
    ["another scheme", "ftp://issuer.example/jwks.json", "INVALID_URL"],
    ["file", "file:///etc/passwd", "INVALID_URL"],
    ["a relative URL", "/jwks.json", "INVALID_URL"],
    ["credentials", "https://user:pass@issuer.example/jwks.json", "INVALID_URL"],
    ["an empty string", "", "INVALID_URL"],
    ["a very long URL", `https://issuer.example/${"a".repeat(3000)}`, "INVALID_URL"],
    ["a loopback literal", "https://127.0.0.1/jwks.json", "ADDRESS_REFUSED"],
    ["a decimal loopback literal", "https://2130706433/jwks.json", "ADDRESS_REFUSED"],
    ["a hex loopback literal", "https://0x7f.1/jwks.json", "ADDRESS_REFUSED"],
    ["an IPv6 loopback literal", "https://[::1]/jwks.json", "ADDRESS_REFUSED"],
    ["an IPv4-mapped loopback literal", "https://[::ffff:127.0.0.1]/jwks.json", "ADDRESS_REFUSED"],
    ["the metadata address", "https://169.254.169.254/latest/meta-data", "ADDRESS_REFUSED"],
  ])("refuses %s", (_name, url, code) => {
    const e = caught(() => parseJwksUrl(url));
    expect(e).toBeInstanceOf(JwksFetchError);
    expect((e as JwksFetchError).code).toBe(code);
  });

  it("with allowInsecure accepts http and loopback, still refuses the metadata address", () => {
    expect(parseJwksUrl("http://127.0.0.1:8080/jwks", { allowInsecure: true }).host).toBe("127.0.0.1:8080");
    expect((caught(() => parseJwksUrl("http://169.254.169.254/", { allowInsecure: true })) as JwksFetchError).code).toBe("ADDRESS_REFUSED");
  });

  it("checkJwksUrl is the save-time 400 naming the field", () => {
    const e = expectApiError(caught(() => checkJwksUrl("http://issuer.example/jwks", "body.trigger.jwt.jwksUrl")), 400, "INVALID_JWKS_URL");
    expect(e.violations[0]?.field).toBe("body.trigger.jwt.jwksUrl");
    expectApiError(caught(() => checkJwksUrl(42, "f")), 400, "INVALID_JWKS_URL");
    expect(checkJwksUrl("https://issuer.example/jwks", "f")).toBe("https://issuer.example/jwks");
  });
});

describe("guardedLookup (the connect-time check)", () => {
  const run = (addresses: LookupAddress[], options: { all?: boolean; family?: number } = {}) =>
    new Promise<{ err: unknown; address: unknown; family: unknown }>((resolve) => {
      guardedLookup(async () => addresses, {})("jwks.example", options, (err, address, family) => resolve({ err, address, family }));
    });

  it("passes on checked public addresses, in the form Node asks for", async () => {
    const addrs = [
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1:248:1893:25c8:1946", family: 6 },
    ];
    expect(await run(addrs, { all: true })).toEqual({ err: null, address: addrs, family: undefined });
    expect(await run(addrs)).toEqual({ err: null, address: "93.184.216.34", family: 4 });
    expect(await run(addrs, { family: 6 })).toEqual({ err: null, address: "2606:2800:220:1:248:1893:25c8:1946", family: 6 });
  });

  it("refuses the connection when any resolved address is refused (a rebinding answer mixing public and private)", async () => {
    const { err } = await run([
      { address: "93.184.216.34", family: 4 },
      { address: "169.254.169.254", family: 4 },
    ]);
    expect(err).toBeInstanceOf(JwksFetchError);
    expect((err as JwksFetchError).code).toBe("ADDRESS_REFUSED");
  });

  it("checks on every connection: a name that re-resolves to loopback is refused the second time", async () => {
    const answers = [[{ address: "93.184.216.34", family: 4 }], [{ address: "127.0.0.1", family: 4 }]];
    let call = 0;
    const lookup = guardedLookup(async () => answers[call++] ?? [], {});
    const ask = () => new Promise<unknown>((resolve) => lookup("rebind.example", {}, (err) => resolve(err)));
    expect(await ask()).toBeNull();
    expect(((await ask()) as JwksFetchError).code).toBe("ADDRESS_REFUSED");
  });

  it("reports an empty answer or a resolver failure as DNS_FAILED", async () => {
    expect(((await run([])).err as JwksFetchError).code).toBe("DNS_FAILED");
    const err = await new Promise<unknown>((resolve) =>
      guardedLookup(() => Promise.reject(new Error("ENOTFOUND")), {})("x.example", {}, (e) => resolve(e)),
    );
    expect((err as JwksFetchError).code).toBe("DNS_FAILED");
  });
});

describe("fetchJwks over real HTTP", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await TestServer.start(serveJson(() => JWKS));
  });
  afterAll(() => server.close());
  const insecure = { allowInsecure: true };

  it("fetches a JWKS from 127.0.0.1 with allowInsecure", async () => {
    server.respond = serveJson(() => JWKS);
    expect(await fetchJwks(server.url(), insecure)).toEqual(JWKS);
  });

  it("refuses the http URL without allowInsecure, without connecting", async () => {
    const before = server.hits;
    await fetchError(fetchJwks(server.url()), "INSECURE_URL");
    expect(server.hits).toBe(before);
  });

  it("refuses https://localhost (resolves to loopback) at connect time, without opening a connection", async () => {
    const counter = await connectionCounter();
    try {
      const e = await fetchError(fetchJwks(`https://localhost:${counter.port}/jwks.json`), "ADDRESS_REFUSED");
      expect(e.message).not.toContain("localhost");
      await fetchError(fetchJwks(`https://127.0.0.1:${counter.port}/jwks.json`), "ADDRESS_REFUSED");
      await fetchError(fetchJwks(`https://[::ffff:127.0.0.1]:${counter.port}/jwks.json`), "ADDRESS_REFUSED");
      expect(counter.count()).toBe(0);
    } finally {
      await counter.close();
    }
  });

  it("refuses a name whose resolver answers a private address, without connecting", async () => {
    const resolve = async () => [{ address: "10.0.0.5", family: 4 }];
    await fetchError(fetchJwks("https://jwks.internal.example/jwks.json", { resolve }), "ADDRESS_REFUSED");
  });

  it("allowInsecure still refuses link-local and metadata addresses after DNS", async () => {
    const resolve = async () => [{ address: "169.254.169.254", family: 4 }];
    await fetchError(fetchJwks("http://metadata.google.internal/computeMetadata/v1/", { ...insecure, resolve }), "ADDRESS_REFUSED");
  });

  it("does not follow a redirect", async () => {
    let followed = false;
    server.respond = (req, res) => {
      if (req.url === "/elsewhere") {
        followed = true;
        return serveJson(() => JWKS)(req, res);
      }
      res.writeHead(302, { location: "/elsewhere" });
      res.end();
    };
    const e = await fetchError(fetchJwks(server.url(), insecure), "REDIRECT");
    expect(e.message).toContain("302");
    expect(followed).toBe(false);
  });

  it.each([301, 303, 307, 308])("treats %i as a failure", async (status) => {
    server.respond = (_req, res) => {
      res.writeHead(status, { location: "https://example.com/" });
      res.end();
    };
    await fetchError(fetchJwks(server.url(), insecure), "REDIRECT");
  });

  it("treats a status other than 200 as a failure", async () => {
    for (const status of [204, 404, 500]) {
      server.respond = (_req, res) => {
        res.writeHead(status);
        res.end();
      };
      await fetchError(fetchJwks(server.url(), insecure), "HTTP_STATUS");
    }
  });

  it("refuses an oversized response announced by Content-Length", async () => {
    server.respond = (_req, res) => {
      res.writeHead(200, { "content-length": String(70_000) });
      res.end("x".repeat(70_000));
    };
    await fetchError(fetchJwks(server.url(), insecure), "TOO_LARGE");
  });

  it("stops reading an oversized chunked response", async () => {
    let written = 0;
    server.respond = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = "x".repeat(16 * 1024);
      const timer = setInterval(() => {
        if (res.destroyed || written > 10_000_000) return clearInterval(timer);
        res.write(chunk);
        written += chunk.length;
      }, 1);
      res.on("close", () => clearInterval(timer));
    };
    await fetchError(fetchJwks(server.url(), { ...insecure, timeoutMs: 5000 }), "TOO_LARGE");
    expect(written).toBeLessThan(1_000_000);
  });

  it("accepts a response of exactly maxBytes", async () => {
    const base = JSON.stringify(JWKS);
    const padded = base.slice(0, -1) + ',"pad":"' + "p".repeat(1000 - base.length - 9) + '"}';
    expect(Buffer.byteLength(padded)).toBe(1000);
    server.respond = (_req, res) => res.end(padded);
    expect((await fetchJwks(server.url(), { ...insecure, maxBytes: 1000 })).keys).toEqual(JWKS.keys);
    await fetchError(fetchJwks(server.url(), { ...insecure, maxBytes: 999 }), "TOO_LARGE");
  });

  it("refuses compressed content", async () => {
    server.respond = (_req, res) => {
      res.writeHead(200, { "content-encoding": "gzip" });
      res.end(gzipSync(JSON.stringify(JWKS)));
    };
    await fetchError(fetchJwks(server.url(), insecure), "INVALID_CONTENT");
  });

  it.each([
    ["not JSON", "<html></html>"],
    ["a JSON array", "[]"],
    ["an object without keys", '{"jwks":[]}'],
    ["keys that is not an array", '{"keys":{}}'],
    ["null", "null"],
  ])("refuses %s", async (_name, body) => {
    server.respond = (_req, res) => res.end(body);
    await fetchError(fetchJwks(server.url(), insecure), "INVALID_CONTENT");
  });

  it("times out on a server that does not answer", async () => {
    server.respond = () => {
      /* never answers */
    };
    const started = Date.now();
    await fetchError(fetchJwks(server.url(), { ...insecure, timeoutMs: 300 }), "TIMEOUT");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("times out on a server that sends the body too slowly", async () => {
    server.respond = (_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write(" "), 50);
      res.on("close", () => clearInterval(timer));
    };
    await fetchError(fetchJwks(server.url(), { ...insecure, timeoutMs: 400 }), "TIMEOUT");
  });

  it("reports a closed port as CONNECT_FAILED", async () => {
    const counter = await connectionCounter();
    const port = counter.port;
    await counter.close();
    await fetchError(fetchJwks(`http://127.0.0.1:${port}/jwks.json`, insecure), "CONNECT_FAILED");
  });
});

describe("parseJwksDocument", () => {
  it("refuses invalid UTF-8", () => {
    expect((caught(() => parseJwksDocument(Buffer.from([0x7b, 0xff, 0x7d]))) as JwksFetchError).code).toBe("INVALID_CONTENT");
  });
});
