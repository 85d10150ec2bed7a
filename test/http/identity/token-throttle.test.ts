// The token endpoint under a guessing attack, and under a fleet asking at once. Guesses are
// throttled (429 with Retry-After), also when they arrive all at once and across two instances on
// one database: five are checked, no more; the throttle answers the right secret from the
// attacker's address alike (no oracle), lets the real client in from its own address meanwhile,
// and lets the right secret in again once the window has passed, Retry-After saying when to the
// second. Requests with the right secret are never refused for arriving together: they wait for
// the attempts in flight, five at a time. An attempt in flight on an instance that was killed holds
// its place until it lapses.
import { createHash } from "node:crypto";
import http from "node:http";
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { withDatabase } from "../../support/old-database.js";
import type { Served } from "../../support/process.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { serveRelease, TEST_SECRETS_KEY } from "../../support/release.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { testDialect } from "../../support/database.js";

const WINDOW_MS = 5 * 60_000;
// Loopback is 127.0.0.0/8: the attacker and the real client connect from two of its addresses.
const ATTACKER = "127.0.0.2";
const CLIENT = "127.0.0.1";

const counts = reliabilitySuite("token-throttle", testDialect());

interface TokenAnswer {
  status: number;
  retryAfter: string | undefined;
  body: { access_token?: string; error?: string; message?: string; details?: { reason?: string }[] };
}

/** POSTs the client-credentials form to `url` from `from`, over a fresh connection. */
function token(url: string, from: string, clientId: string, clientSecret: string): Promise<TokenAnswer> {
  const body = new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret }).toString();
  const target = new URL(`${url}/auth/v1/token`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: "POST", localAddress: from, agent: false, headers: { "Content-Type": "application/x-www-form-urlencoded", "Content-Length": Buffer.byteLength(body) } },
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

const statuses = (answers: TokenAnswer[]) => answers.map((a) => a.status).sort();
const times = <T>(n: number, status: T) => Array.from({ length: n }, () => status);

describe("on one instance", () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer();
  });
  afterAll(async () => ts?.stop());

  const guesses = (from: string, clientId: string, n: number) => Promise.all(Array.from({ length: n }, (_, i) => token(ts.url, from, clientId, `guess-${i}-${Math.random()}`)));

  describe("a guessing attack on one client id", () => {
    it("is throttled after five failures: 429 with Retry-After, even for the right secret from the attacker's address", () =>
      counts.check(async () => {
        const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
        for (let i = 0; i < 5; i++) expect((await token(ts.url, ATTACKER, clientId, `wrong-${i}`)).status).toBe(401);
        const throttled = await token(ts.url, ATTACKER, clientId, "wrong-again");
        expect(throttled.status).toBe(429);
        expect(throttled.body.message).toBe("too many failed attempts for this client; retry later");
        expect(throttled.retryAfter).toBe(String(WINDOW_MS / 1000));
        // The throttle must not tell a right guess from a wrong one.
        expect((await token(ts.url, ATTACKER, clientId, clientSecret)).status).toBe(429);
      }));

    it("arriving all at once, exactly five guesses are checked (8 and 50 at once); the rest are 429", () =>
      counts.check(async () => {
        for (const n of [8, 50]) {
          const { clientId } = await ts.userClient(["ROLE_USER"]);
          expect(statuses(await guesses(ATTACKER, clientId, n))).toEqual([...times(5, 401), ...times(n - 5, 429)]);
        }
      }));

    it("does not lock the real client out: its right secret works at once from its own address", () =>
      counts.check(async () => {
        const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
        await guesses(ATTACKER, clientId, 20);
        expect((await token(ts.url, ATTACKER, clientId, clientSecret)).status).toBe(429);
        const real = await token(ts.url, CLIENT, clientId, clientSecret);
        expect(real.status).toBe(200);
        expect(real.body.access_token).toBeTruthy();
      }));

    it("the right secret works again from the attacker's address once the window has passed; Retry-After says when, to the second", () =>
      counts.check(async () => {
        const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
        // Five failures 20 s apart: the oldest leaves the window 300 s after it.
        for (let i = 0; i < 5; i++) {
          expect((await token(ts.url, ATTACKER, clientId, `wrong-${i}`)).status).toBe(401);
          ts.clock.advance(20_000);
        }
        expect((await token(ts.url, ATTACKER, clientId, clientSecret)).retryAfter).toBe("200");
        ts.clock.advance(199_000);
        expect(await token(ts.url, ATTACKER, clientId, clientSecret)).toMatchObject({ status: 429, retryAfter: "1" });
        ts.clock.advance(999);
        expect(await token(ts.url, ATTACKER, clientId, clientSecret), "never 0").toMatchObject({ status: 429, retryAfter: "1" });
        ts.clock.advance(1);
        expect((await token(ts.url, ATTACKER, clientId, clientSecret)).status).toBe(200);
        // A success clears the failures: five new ones are needed to be throttled again.
        for (let i = 0; i < 4; i++) expect((await token(ts.url, ATTACKER, clientId, `wrong-${i}`)).status).toBe(401);
        expect((await token(ts.url, ATTACKER, clientId, clientSecret)).status).toBe(200);
      }));

    it("unknown client ids are throttled alike (the answer does not tell them from known ones)", () =>
      counts.check(async () => {
        expect(statuses(await guesses(ATTACKER, `nobody-${Date.now()}`, 8))).toEqual([...times(5, 401), ...times(3, 429)]);
      }));
  });

  describe("a fleet of workers asking at once with the right secret from one address", () => {
    it("gets a token for every one of 8, and of 50, requests sent together", () =>
      counts.check(async () => {
        for (const n of [8, 50]) {
          const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
          const answers = await Promise.all(Array.from({ length: n }, () => token(ts.url, ATTACKER, clientId, clientSecret)));
          expect(statuses(answers)).toEqual(times(n, 200));
        }
      }));

    it("is not held back by a few failures of its own among them: the right secrets all get a token", () =>
      counts.check(async () => {
        const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
        const answers = await Promise.all([
          ...Array.from({ length: 3 }, (_, i) => token(ts.url, ATTACKER, clientId, `stale-${i}`)),
          ...Array.from({ length: 20 }, () => token(ts.url, ATTACKER, clientId, clientSecret)),
        ]);
        expect(answers.slice(3).map((a) => a.status)).toEqual(times(20, 200));
        expect(answers.slice(0, 3).map((a) => a.status)).toEqual(times(3, 401));
      }));
  });
});

describe(`two instances on one ${testDialect()} database`, () => {
  let ts: TestServer;
  let other: Served;
  beforeAll(async () => {
    ts = await startTestServer({ SECRETS_KEY: TEST_SECRETS_KEY });
    other = await serveRelease({ DATABASE_URL: ts.databaseUrl, SECRETS_KEY: TEST_SECRETS_KEY });
  }, 120_000);
  afterAll(async () => {
    await other?.stop();
    await ts?.stop();
  });
  // The other instance reads the system's clock: this one's is set to it, so that both see the
  // same attempts in flight (one lapses 30 s after it started).
  beforeEach(() => ts.clock.set(Date.now()));

  /** `n` requests at once, every other one to each instance. */
  const together = (n: number, clientId: string, secret: (i: number) => string) =>
    Promise.all(Array.from({ length: n }, (_, i) => token(i % 2 === 0 ? ts.url : other.url, ATTACKER, clientId, secret(i))));

  it("16 guesses at once, half to each: five are checked in all, the rest are 429", () =>
    counts.check(async () => {
      const { clientId } = await ts.userClient(["ROLE_USER"]);
      expect(statuses(await together(16, clientId, (i) => `guess-${i}`))).toEqual([...times(5, 401), ...times(11, 429)]);
    }));

  it("30 requests with the right secret at once, half to each: every one gets a token", () =>
    counts.check(async () => {
      const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
      expect(statuses(await together(30, clientId, () => clientSecret))).toEqual(times(30, 200));
    }));

  it("an attempt in flight on an instance that is killed holds its place until it lapses: a request waiting for it is answered 429 with Retry-After until then, and admitted after", { timeout: 120_000 }, () =>
    counts.check(async () => {
      const { clientId, clientSecret } = await ts.userClient(["ROLE_USER"]);
      const started = await killMidAttempt(other, clientId, ts.databaseUrl);
      for (let i = 0; i < 4; i++) expect((await token(ts.url, ATTACKER, clientId, `wrong-${i}`)).status).toBe(401);
      // Four failures and the dead attempt: the right secret waits for it (10 s), then is told when it lapses.
      const waited = await token(ts.url, ATTACKER, clientId, clientSecret);
      expect(waited).toMatchObject({ status: 429, body: { message: "too many attempts for this client at once; retry later" } });
      expect(waited.body.details?.[0]?.reason).toBe("TOO_MANY_FAILED_ATTEMPTS");
      const lapsesIn = Math.ceil((started + 30_000 - ts.clock.now()) / 1000);
      expect(waited.retryAfter).toBe(String(lapsesIn));
      ts.clock.advance(lapsesIn * 1000);
      expect((await token(ts.url, ATTACKER, clientId, clientSecret)).status).toBe(200);
    }));
});

/**
 * Sends a wrong guess to `instance` from ATTACKER and kills the instance (SIGKILL) while the attempt
 * is in flight (its place taken, not decided); answers when the attempt started (the database's
 * entry). Once the entry is seen, the test takes the token_failures table for itself (SQLite: the
 * write lock; PostgreSQL: LOCK TABLE), so that the instance cannot decide the attempt before it is
 * killed; one decided in the moment before is tried again with another guess.
 */
async function killMidAttempt(instance: Served, clientId: string, databaseUrl: string): Promise<number> {
  const key = createHash("sha256").update(JSON.stringify([clientId, ATTACKER]), "utf8").digest("base64url");
  return withDatabase(databaseUrl, (db, dialect) =>
    db.connection().execute(async (conn) => {
      const inFlight = async () => {
        const row = await conn.selectFrom("token_failures").select("attempts").where("key", "=", key).executeTakeFirst();
        return row ? (JSON.parse(row.attempts) as number[]).find((e) => !Number.isInteger(e)) : undefined;
      };
      for (let tries = 0; tries < 5; tries++) {
        const guess = token(instance.url, ATTACKER, clientId, `wrong-${tries}`).catch(() => undefined);
        const deadline = Date.now() + 10_000;
        // A pause a turn: on SQLite a query answers without giving the event loop (and the request) a turn.
        while ((await inFlight()) === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
        await sql`begin`.execute(conn);
        await (dialect === "sqlite" ? sql`delete from token_failures where key = 'none'` : sql`lock table token_failures in access exclusive mode`).execute(conn);
        const entry = await inFlight();
        if (entry !== undefined) {
          instance.child.kill("SIGKILL");
          await instance.stop();
          await sql`rollback`.execute(conn);
          await guess;
          return Math.floor(entry);
        }
        await sql`rollback`.execute(conn);
        await guess;
      }
      throw new Error("every attempt was decided before the test could hold it in flight");
    }),
  );
}
