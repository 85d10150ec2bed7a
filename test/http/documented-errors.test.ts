// Every operation answers the errors its contract documents for every caller alike: no token, an
// expired token, a role that may not call it, a body over the limit, a body that is not JSON, and a
// rate limit exceeded (its source address's, its credential's, its listener's). Each request goes
// over real HTTP, and each answer must be one of the operation's documented examples (status,
// reason and message), so a partner reading the examples sees what the server says.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALLOWED_ROLES } from "../../src/identity/roles.js";
import { declaredErrors } from "../support/declared-errors.js";
import { operations } from "../support/contract.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../support/server.js";

let ts: TestServer;
let userToken: string;
let expiredToken: string;
/** A server with low rate limits behind a trusted proxy (the test), so each request can be a client of its own. */
let limited: TestServer;
let limitedToken: string;
const QUOTA = 3;

const token = async (credentials: { clientId: string; clientSecret: string }, url = ts.url): Promise<string> => {
  const answer = await fetch(`${url}/auth/v1/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: credentials.clientId, client_secret: credentials.clientSecret }),
  });
  return ((await answer.json()) as { access_token: string }).access_token;
};

beforeAll(async () => {
  ts = await startTestServer();
  const user = await ts.userClient(["ROLE_USER"]);
  expiredToken = await token(user);
  ts.clock.advance(16 * 60_000);
  userToken = await token(user);
  const quota = `${QUOTA}/1`;
  limited = await startTestServer({ TRUST_PROXY: "127.0.0.1/32", RATE_LIMIT_SOURCE: quota, RATE_LIMIT_CREDENTIAL: quota, RATE_LIMIT_LISTENER: quota });
  const limitedUser = await limited.userClient(["ROLE_USER"]);
  // The setup took this address's quota: a window later it has it again.
  limited.clock.advance(1000);
  limitedToken = await token(limitedUser, limited.url);
});
afterAll(async () => Promise.all([ts?.stop(), limited?.stop()]));

/** A URL of the operation, its path parameters filled with well-formed ids. */
const urlOf = (path: string, server = ts) => server.url + path.replace(/\{[a-z_]+\}/g, "doc-errors-1");

async function send(method: string, path: string, headers: Record<string, string>, body?: string, server = ts) {
  const answer = await fetch(urlOf(path, server), { method: method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) });
  const json = (await answer.json()) as { message?: string; details?: { reason?: string }[] };
  const rateLimited = answer.status === 429 ? { retryAfter: answer.headers.get("retry-after"), rateLimit: /;r=0;t=[1-9]/.test(answer.headers.get("ratelimit") ?? "") } : {};
  return { status: answer.status, reason: json.details?.find((d) => d.reason)?.reason, message: json.message, ...rateLimited };
}

let clients = 0;
/** QUOTA requests, then one more whose answer is returned, each as a client of its own address unless `from` is given. */
async function overTheLimit(method: string, path: string, headers: Record<string, string>, from?: string) {
  const forwarded = () => ({ "X-Forwarded-For": from ?? `198.51.${Math.floor(++clients / 250)}.${clients % 250}` });
  for (let i = 0; i < QUOTA; i++) expect((await send(method, path, { ...headers, ...forwarded() }, undefined, limited)).status).not.toBe(429);
  const { retryAfter, rateLimit, ...answer } = await send(method, path, { ...headers, ...forwarded() }, undefined, limited);
  expect({ retryAfter, rateLimit }).toEqual({ retryAfter: "1", rateLimit: true });
  return answer;
}

const documented = (operationId: string, status: number) =>
  declaredErrors.filter((d) => d.operationId === operationId && d.status === status).map((d) => ({ status: d.status, reason: d.reason, message: d.message }));

describe("the errors every operation documents", () => {
  for (const { operationId, method, path, op } of operations) {
    const secured = operationId in ALLOWED_ROLES;
    // The webhook intake reads its body only for a listener that exists (its own suite covers it).
    const takesJson = Boolean(op.requestBody?.content?.["application/json"]) && op["x-raw-request"] !== true;
    const name = operationId.replace(/^svc\.api\./, "");

    if (secured) {
      it(`${name}: 401 without a token and with an expired one`, async () => {
        for (const auth of [{}, { Authorization: `Bearer ${expiredToken}` }] as Record<string, string>[]) {
          expect(documented(operationId, 401)).toContainEqual(await send(method, path, auth));
        }
      });
    }
    if (secured && !ALLOWED_ROLES[operationId as keyof typeof ALLOWED_ROLES].includes("ROLE_USER")) {
      it(`${name}: 403 for a role that may not call it`, async () => {
        expect(documented(operationId, 403)).toContainEqual(await send(method, path, { Authorization: `Bearer ${userToken}` }));
      });
    }
    it(`${name}: 429 for a source address over its rate limit${secured ? ", and for a credential over its own" : ""}${op["x-raw-request"] === true ? ", and for a listener over its own" : ""}`, async () => {
      // A window later, every limit has its whole quota again.
      limited.clock.advance(1000);
      expect(documented(operationId, 429)).toContainEqual(await overTheLimit(method, path, {}, "203.0.113.1"));
      if (secured) expect(documented(operationId, 429)).toContainEqual(await overTheLimit(method, path, { Authorization: `Bearer ${limitedToken}` }));
      if (op["x-raw-request"] === true) {
        // The source's requests went to the same listener: a window later it has its quota again.
        limited.clock.advance(1000);
        expect(documented(operationId, 429)).toContainEqual(await overTheLimit(method, path, {}));
      }
    });
    if (takesJson) {
      it(`${name}: 413 for a body over the limit, 415 for a body that is not JSON`, async () => {
        const auth: Record<string, string> = secured ? { Authorization: `Bearer ${await token(BOOTSTRAP)}` } : {};
        const large = JSON.stringify({ padding: "x".repeat(2 * 1024 * 1024) });
        expect(documented(operationId, 413)).toContainEqual(await send(method, path, { ...auth, "Content-Type": "application/json" }, large));
        expect(documented(operationId, 415)).toContainEqual(await send(method, path, { ...auth, "Content-Type": "text/plain" }, "{}"));
      });
    }
  }
});
