// The token endpoint under a guessing attack: guesses are throttled (429 with Retry-After), also
// when they arrive all at once; the throttle answers the right secret from the attacker's address
// alike (no oracle), lets the real client in from its own address meanwhile, and lets the right
// secret in again once the window has passed.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reliabilitySuite } from "../support/reliability.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { testDialect } from "../support/database.js";

const WINDOW_MS = 5 * 60_000;
// Loopback is 127.0.0.0/8: the attacker and the real client connect from two of its addresses.
const ATTACKER = "127.0.0.2";
const CLIENT = "127.0.0.1";

const counts = reliabilitySuite("token-throttle", testDialect());
let ts: TestServer;

beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => ts?.stop());

interface TokenAnswer {
  status: number;
  retryAfter: string | undefined;
  body: { access_token?: string; error?: string };
}

/** POSTs the client-credentials form from `from`, over a fresh connection. */
function token(from: string, clientId: string, clientSecret: string): Promise<TokenAnswer> {
  const body = new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret }).toString();
  const url = new URL(`${ts.url}/auth/v1/token`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", localAddress: from, agent: false, headers: { "Content-Type": "application/x-www-form-urlencoded", "Content-Length": Buffer.byteLength(body) } },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"], body: JSON.parse(text) as TokenAnswer["body"] }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const guesses = (from: string, clientId: string, n: number) => Promise.all(Array.from({ length: n }, (_, i) => token(from, clientId, `guess-${i}-${Math.random()}`)));

describe("a guessing attack on one client id", () => {
  it("is throttled after five failures: 429 with Retry-After, even for the right secret from the attacker's address", () =>
    counts.check(async () => {
      const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
      for (let i = 0; i < 5; i++) expect((await token(ATTACKER, clientId, `wrong-${i}`)).status).toBe(401);
      const throttled = await token(ATTACKER, clientId, "wrong-again");
      expect(throttled.status).toBe(429);
      expect(Number(throttled.retryAfter)).toBeGreaterThan(0);
      expect(Number(throttled.retryAfter)).toBeLessThanOrEqual(WINDOW_MS / 1000);
      // The throttle must not tell a right guess from a wrong one.
      expect((await token(ATTACKER, clientId, clientSecret)).status).toBe(429);
    }));

  it("arriving all at once, at most five guesses are checked; the rest are 429", () =>
    counts.check(async () => {
      const { clientId } = await ts.userClient(["ROLE_USER"]);
      const statuses = (await guesses(ATTACKER, clientId, 50)).map((a) => a.status);
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
      expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
    }));

  it("does not lock the real client out: its right secret works at once from its own address", () =>
    counts.check(async () => {
      const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
      await guesses(ATTACKER, clientId, 20);
      expect((await token(ATTACKER, clientId, clientSecret)).status).toBe(429);
      const real = await token(CLIENT, clientId, clientSecret);
      expect(real.status).toBe(200);
      expect(real.body.access_token).toBeTruthy();
    }));

  it("the right secret works again from the attacker's address once the window has passed", () =>
    counts.check(async () => {
      const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
      await guesses(ATTACKER, clientId, 20);
      expect((await token(ATTACKER, clientId, clientSecret)).status).toBe(429);
      ts.clock.advance(WINDOW_MS - 1000);
      expect((await token(ATTACKER, clientId, clientSecret)).status).toBe(429);
      ts.clock.advance(2000);
      expect((await token(ATTACKER, clientId, clientSecret)).status).toBe(200);
      // A success clears the failures: five new ones are needed to be throttled again.
      for (let i = 0; i < 4; i++) expect((await token(ATTACKER, clientId, `wrong-${i}`)).status).toBe(401);
      expect((await token(ATTACKER, clientId, clientSecret)).status).toBe(200);
    }));

  it("unknown client ids are throttled alike (the answer does not tell them from known ones)", () =>
    counts.check(async () => {
      const statuses = (await guesses(ATTACKER, `nobody-${Date.now()}`, 8)).map((a) => a.status);
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(3);
    }));
});
