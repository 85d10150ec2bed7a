// Attacks through the JWKS URL of a JWT listener, on a server started as in production
// (JWKS_ALLOW_INSECURE=0). URLs that can never be fetched safely are refused when the trigger is
// saved (400); names that resolve to internal addresses, redirects, a slow host and a huge answer
// are refused when the keys are fetched (401 JWKS_UNAVAILABLE). A connection counter on 127.0.0.1
// stands for the internal network: no attack may open a connection to it. One local TLS server on
// 127.0.0.2, under a test name with a self-signed certificate, stands in for a public JWKS host
// (the only address the server is told to treat as public). No answer may name an internal address.
import type { LookupAddress } from "node:dns";
import { lookup } from "node:dns/promises";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import https from "node:https";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDialect } from "../../support/database.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { expectError } from "../limits/helpers.js";
import { automationsApi, createHooked, errorInfo, expectAccepted, expectRefused, newEventId, postRaw, signClaims, signingKey, unixTime, webhookClaims, type Answer, type SigningKey } from "./helpers.js";

const PUBLIC_NAME = "jwks.example.test";
const STAND_IN = "127.0.0.2";
const tlsFixture = (ext: string) => readFileSync(new URL(`../../fixtures/tls/jwks-example-test.${ext}`, import.meta.url));

const counts = reliabilitySuite("jwks-url-attacks", testDialect());
let ts: TestServer;
let key: SigningKey;
let internal: { port: number; connections: number; server: net.Server };
let standIn: { port: number; server: https.Server; sockets: Set<net.Socket>; hugeBytesSent: number; hugeFinished: boolean };

/** Test DNS: names for each kind of internal address; anything else is looked up for real (`localhost`). */
const NAMES: Record<string, LookupAddress[]> = {
  [PUBLIC_NAME]: [{ address: STAND_IN, family: 4 }],
  "loopback.jwks.test": [{ address: "127.0.0.1", family: 4 }],
  "private.jwks.test": [{ address: "10.0.0.1", family: 4 }],
  "metadata.jwks.test": [{ address: "169.254.169.254", family: 4 }],
  "mapped.jwks.test": [{ address: "::ffff:127.0.0.1", family: 6 }],
  "mixed.jwks.test": [
    { address: "93.184.216.34", family: 4 },
    { address: "127.0.0.1", family: 4 },
  ],
};
const resolve = async (hostname: string): Promise<LookupAddress[]> => NAMES[hostname] ?? lookup(hostname, { all: true });

const HUGE = 10 * 1024 * 1024;

beforeAll(async () => {
  key = await signingKey("ES256", "k1");
  const counter = { port: 0, connections: 0, server: net.createServer((s) => (counter.connections++, s.destroy())) };
  counter.server.listen(0, "127.0.0.1");
  await once(counter.server, "listening");
  counter.port = (counter.server.address() as net.AddressInfo).port;
  internal = counter;

  const host = { port: 0, sockets: new Set<net.Socket>(), hugeBytesSent: 0, hugeFinished: false } as typeof standIn;
  host.server = https.createServer({ key: tlsFixture("key"), cert: tlsFixture("crt") }, (req, res) => {
    const to = (location: string) => res.writeHead(302, { location }).end();
    switch (new URL(req.url ?? "/", "https://stand-in").pathname) {
      case "/jwks.json":
        return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [key.publicJwk] }));
      case "/redirect-loopback":
        return to(`http://127.0.0.1:${internal.port}/jwks.json`);
      case "/redirect-localhost":
        return to(`https://localhost:${internal.port}/jwks.json`);
      case "/redirect-metadata":
        return to("http://169.254.169.254/latest/meta-data/iam/security-credentials/");
      case "/slow":
        return; // never answers
      case "/drip": {
        res.writeHead(200, { "content-type": "application/json" });
        res.write('{"keys":[');
        const timer = setInterval(() => res.write(" "), 100);
        res.on("close", () => clearInterval(timer));
        return;
      }
      case "/huge": {
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (host.hugeBytesSent < HUGE) {
            host.hugeBytesSent += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
          res.end(() => (host.hugeFinished = true));
        };
        res.write('{"keys":[],"padding":"');
        return pump();
      }
      default:
        return void res.writeHead(404).end();
    }
  });
  host.server.on("connection", (s: net.Socket) => (host.sockets.add(s), s.on("close", () => host.sockets.delete(s))));
  host.server.listen(0, STAND_IN);
  await once(host.server, "listening");
  host.port = (host.server.address() as net.AddressInfo).port;
  standIn = host;

  ts = await startTestServer({ JWKS_ALLOW_INSECURE: "0" }, undefined, {
    jwksFetch: { resolve, ca: tlsFixture("crt"), exemptAddresses: [STAND_IN] },
  });
});

afterAll(async () => {
  await ts?.stop();
  for (const s of standIn?.sockets ?? []) s.destroy();
  await Promise.all([standIn?.server, internal?.server].filter(Boolean).map((s) => new Promise((r) => s!.close(r))));
});

/**
 * Nothing in an answer may name an internal address, a port of ours, or a host name the attacker
 * chose. The request id is left out: a random UUID holds "ffff" or a port's digits now and then.
 */
function expectNoLeak(answer: string): void {
  const text = answer.replace(/"requestId":"[^"]*"/g, '"requestId":""');
  for (const secret of ["127.0.0.", "localhost", "169.254", "10.0.0.1", "::1", "ffff", "jwks.test", PUBLIC_NAME, String(internal.port), String(standIn.port), "/latest/meta-data"]) {
    expect(text, `the answer names ${secret}`).not.toContain(secret);
  }
}

/** A JWT delivery to a listener whose JWKS is `jwksUrl` (which the server fetches on it). */
async function deliver(jwksUrl: string): Promise<Answer> {
  const hook = await createHooked(ts, { jwksUrl });
  const eventId = newEventId();
  const body = '{"attack":true}';
  const token = await signClaims(key, webhookClaims(ts, hook.url, eventId, body));
  return postRaw(hook.url, {
    headers: { "Content-Type": "application/json", "Webhook-Timestamp": unixTime(ts), "Webhook-Event-Id": eventId, Authorization: `Bearer ${token}` },
    body,
  });
}

const p = () => internal.port;
const SAVE_TIME: [string, () => string][] = [
  ["http:", () => `http://${PUBLIC_NAME}/jwks.json`],
  ["file:", () => "file:///etc/passwd"],
  ["data:", () => 'data:application/json,{"keys":[]}'],
  ["ftp:", () => `ftp://${PUBLIC_NAME}/jwks.json`],
  ["gopher:", () => `gopher://127.0.0.1:${p()}/_GET%20/`],
  ["127.0.0.1", () => `https://127.0.0.1:${p()}/jwks.json`],
  ["[::1]", () => `https://[::1]:${p()}/jwks.json`],
  ["169.254.169.254 (cloud metadata)", () => "https://169.254.169.254/latest/meta-data/"],
  ["10.0.0.1 (private)", () => "https://10.0.0.1/jwks.json"],
  ["172.16.0.1 (private)", () => "https://172.16.0.1/jwks.json"],
  ["192.168.1.1 (private)", () => "https://192.168.1.1/jwks.json"],
  ["100.64.0.1 (shared address space)", () => "https://100.64.0.1/jwks.json"],
  ["0.0.0.0", () => `https://0.0.0.0:${p()}/jwks.json`],
  ["[::ffff:127.0.0.1] (IPv4-mapped)", () => `https://[::ffff:127.0.0.1]:${p()}/jwks.json`],
  ["[::ffff:169.254.169.254] (IPv4-mapped metadata)", () => "https://[::ffff:169.254.169.254]/"],
  ["2130706433 (decimal 127.0.0.1)", () => `https://2130706433:${p()}/jwks.json`],
  ["0x7f000001 (hex 127.0.0.1)", () => `https://0x7f000001:${p()}/jwks.json`],
  ["0177.0.0.1 (octal 127.0.0.1)", () => `https://0177.0.0.1:${p()}/jwks.json`],
  ["127.1 (short 127.0.0.1)", () => `https://127.1:${p()}/jwks.json`],
  ["2852039166 (decimal 169.254.169.254)", () => "https://2852039166/latest/meta-data/"],
  ["[fd00:ec2::254] (IPv6 metadata)", () => "https://[fd00:ec2::254]/"],
  ["[fe80::1] (link-local)", () => "https://[fe80::1]/"],
  ["credentials in the URL", () => `https://user:pass@${PUBLIC_NAME}/jwks.json`],
];

describe("refused when the trigger is saved (400 INVALID_JWKS_URL)", () => {
  it.each(SAVE_TIME)("%s", (_, url) =>
    counts.check(async () => {
      const answer = await automationsApi(ts.admin).create({ displayName: "attack", isDraft: false, enabled: true, triggers: [{ webhook: { jwt: { jwksUrl: url() } } }], automationSteps: [] });
      expectError(answer, 400);
      expect(["INVALID_JWKS_URL", "INVALID_ARGUMENT"]).toContain(errorInfo(answer.error).reason);
      expectNoLeak(JSON.stringify(answer.error));
    }),
  );
});

const FETCH_TIME: [string, () => string][] = [
  ["localhost (resolves to loopback)", () => `https://localhost:${p()}/jwks.json`],
  ["a name resolving to 127.0.0.1", () => `https://loopback.jwks.test:${p()}/jwks.json`],
  ["a name resolving to 10.0.0.1", () => "https://private.jwks.test/jwks.json"],
  ["a name resolving to 169.254.169.254", () => "https://metadata.jwks.test/latest/meta-data/"],
  ["a name resolving to ::ffff:127.0.0.1", () => `https://mapped.jwks.test:${p()}/jwks.json`],
  ["a name resolving to a public and a loopback address", () => `https://mixed.jwks.test:${p()}/jwks.json`],
  ["a redirect to 127.0.0.1", () => `https://${PUBLIC_NAME}:${standIn.port}/redirect-loopback`],
  ["a redirect to localhost", () => `https://${PUBLIC_NAME}:${standIn.port}/redirect-localhost`],
  ["a redirect to the metadata address", () => `https://${PUBLIC_NAME}:${standIn.port}/redirect-metadata`],
  ["a host that never answers", () => `https://${PUBLIC_NAME}:${standIn.port}/slow`],
  ["a host that drips its answer a byte at a time", () => `https://${PUBLIC_NAME}:${standIn.port}/drip`],
  ["a 10 MB answer", () => `https://${PUBLIC_NAME}:${standIn.port}/huge`],
];

describe("refused when the keys are fetched (401 JWKS_UNAVAILABLE)", () => {
  it("the stand-in public host works: the same setup with its real JWKS is accepted", () =>
    counts.check(async () => {
      expectAccepted(await deliver(`https://${PUBLIC_NAME}:${standIn.port}/jwks.json`));
    }));

  it.each(FETCH_TIME)("%s", (_, url) =>
    counts.check(async () => {
      const answer = await deliver(url());
      expectRefused(answer, 401, "JWKS_UNAVAILABLE");
      expectNoLeak(JSON.stringify(answer.body));
    }),
  );

  it("the 10 MB answer was cut off, not read to its end", () => {
    expect(standIn.hugeFinished).toBe(false);
  });

  it("while a fetch hangs on a host that never answers, the server answers everything else", () =>
    counts.check(async () => {
      const hanging = deliver(`https://${PUBLIC_NAME}:${standIn.port}/slow?again`);
      const health = await fetch(`${ts.url}/healthz`);
      expect(health.status).toBe(200);
      expectAccepted(await deliver(`https://${PUBLIC_NAME}:${standIn.port}/jwks.json?other`));
      expectRefused(await hanging, 401, "JWKS_UNAVAILABLE");
    }));

  it("no attack opened a connection to the internal listener", () => {
    expect(internal.connections).toBe(0);
  });
});

