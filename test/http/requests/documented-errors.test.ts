// Every operation answers the errors its contract documents for every caller alike: no token, an
// expired token, a role that may not call it, a body over the limit, a body that is not JSON or not
// an object, a path parameter that is not percent-encoded UTF-8, a page_size not written as a decimal
// integer, a repeated page_token, and a rate limit exceeded (its source address's, its credential's,
// its listener's, an address's failure budget on a listener). Each request goes over real HTTP, and
// each answer must be one of the operation's documented examples (status, reason and message), so a
// partner reading the examples sees what the server says.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALLOWED_ROLES } from "../../../src/identity/roles.js";
import { declaredErrors } from "../../support/declared-errors.js";
import { contract, deref, operations } from "../../support/contract.js";
import { senderBody, senderHeaders, senderKindOf, senderListener, UNKNOWN_SECRET } from "../../support/sender-deliveries.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";
import { createHooked, hmacHeaders, newEventId, unixTime } from "../webhooks/helpers.js";

let ts: TestServer;
let userToken: string;
let appServiceToken: string;
let expiredToken: string;
/** A server with low rate limits behind a trusted proxy (the test), so each request can be a client of its own. */
let limited: TestServer;
let limitedToken: string;
const QUOTA = 3;
/** Failed authentications an address may make on a listener: fewer than QUOTA, so that its source limit has room for the refusal. */
const FAILURES = 2;

const token = async (credentials: { clientId: string; clientSecret: string }, url = ts.url): Promise<string> => {
  const answer = await fetch(`${url}/auth/v1/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: credentials.clientId, client_secret: credentials.clientSecret }),
  });
  return ((await answer.json()) as { access_token: string }).access_token;
};

beforeAll(async () => {
  // Sandboxes, so that the sandbox's own operations (bound there only) answer their documented errors
  // too; elsewhere they answer 404 SANDBOX_ONLY alone (test/http/sandbox/sandbox-clock.test.ts).
  ts = await startTestServer({}, undefined, { sandbox: true });
  const user = await ts.userClient(["ROLE_USER"]);
  expiredToken = await token(user);
  ts.clock.advance(16 * 60_000);
  userToken = await token(user);
  appServiceToken = await token(await ts.userClient(["ROLE_APP_SERVICE"]));
  const quota = `${QUOTA}/1`;
  limited = await startTestServer({ TRUST_PROXY: "127.0.0.1/32", RATE_LIMIT_SOURCE: quota, RATE_LIMIT_CREDENTIAL: quota, RATE_LIMIT_LISTENER: quota, RATE_LIMIT_LISTENER_FAILURES: `${FAILURES}/1` }, undefined, { sandbox: true });
  const limitedUser = await limited.userClient(["ROLE_USER"]);
  // The setup took this address's quota: a window later it has it again.
  limited.clock.advance(1000);
  limitedToken = await token(limitedUser, limited.url);
});
afterAll(async () => Promise.all([ts?.stop(), limited?.stop()]));

/** A URL of the operation on `server`, its path parameters filled with well-formed ids (16 letters and digits fit every one; the first is `first`, when given). */
const urlOf = (path: string, first?: string, server = ts) => server.url + path.replace(/\{[a-z_]+\}/, first ?? "docErrors0000001").replace(/\{[a-z_]+\}/g, "docErrors0000001");

async function send(method: string, path: string, headers: Record<string, string>, body?: string, target = urlOf(path)) {
  const answer = await fetch(target, { method: method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) });
  const json = (await answer.json()) as { message?: string; details?: { reason?: string }[] };
  const rateLimited = answer.status === 429 ? { retryAfter: answer.headers.get("retry-after"), rateLimit: /;r=0;t=[1-9]/.test(answer.headers.get("ratelimit") ?? "") } : {};
  return { status: answer.status, reason: json.details?.find((d) => d.reason)?.reason, message: json.message, ...rateLimited };
}

let clients = 0;
/** An address of its own for the next request, forwarded by the trusted proxy (the test). */
const newClient = () => ({ "X-Forwarded-For": `198.51.${Math.floor(++clients / 250)}.${clients % 250}` });

/** A 429's answer, its Retry-After and RateLimit checked. */
function refusal({ retryAfter, rateLimit, ...answer }: Awaited<ReturnType<typeof send>>) {
  expect({ retryAfter, rateLimit }).toEqual({ retryAfter: "1", rateLimit: true });
  return answer;
}

/** QUOTA requests, then one more whose answer is returned, each as a client of its own address unless `from` is given. */
async function overTheLimit(method: string, path: string, headers: Record<string, string>, from?: string) {
  const forwarded = () => (from ? { "X-Forwarded-For": from } : newClient());
  const target = urlOf(path, undefined, limited);
  for (let i = 0; i < QUOTA; i++) expect((await send(method, path, { ...headers, ...forwarded() }, undefined, target)).status).not.toBe(429);
  return refusal(await send(method, path, { ...headers, ...forwarded() }, undefined, target));
}

/**
 * The webhook intake's own limits, on a listener of the operation's kind that exists: signed
 * deliveries, each from an address of its own, over the listener's quota; then forged ones from
 * one address over its failure budget. Answers both refusals.
 */
async function overTheIntakeLimits(operationId: string, method: string, path: string) {
  limited.clock.advance(1000);
  const kind = senderKindOf(operationId);
  const hook = kind ? await senderListener(limited, kind) : await createHooked(limited);
  limited.clock.advance(1000);
  const target = urlOf(path, hook.listenerId, limited);
  const deliver = async (secret: string, from: Record<string, string>) => {
    const id = newEventId();
    const body = kind ? senderBody(kind, id) : "{}";
    const signed = kind ? await senderHeaders(kind, secret, body, { id, timestamp: unixTime(limited) }) : hmacHeaders(secret, body, unixTime(limited), id);
    return send(method, path, { ...signed, ...from }, body, target);
  };
  for (let i = 0; i < QUOTA; i++) expect((await deliver(hook.secret, newClient())).status).toBe(200);
  const overListener = refusal(await deliver(hook.secret, newClient()));
  const forger = newClient();
  for (let i = 0; i < FAILURES; i++) expect((await deliver(UNKNOWN_SECRET, forger)).status).toBe(401);
  return [overListener, refusal(await deliver(UNKNOWN_SECRET, forger))];
}

const documented = (operationId: string, status: number) =>
  declaredErrors.filter((d) => d.operationId === operationId && d.status === status).map((d) => ({ status: d.status, reason: d.reason, message: d.message }));

/** Names of the query parameters an operation declares. */
const queryOf = (path: string, op: Record<string, any>): string[] =>
  [...((contract.paths[path].parameters ?? []) as object[]), ...((op.parameters ?? []) as object[])].map((p) => deref(p)).filter((p) => p.in === "query").map((p) => p.name as string);

/** Not written as a decimal integer, each one. */
const NOT_DECIMAL = ["ten", "Infinity", "0x10", "1e2", "1.5", "25.0", "+25", "025", "-0", " 25", "25 ", ""];

describe("the errors every operation documents", () => {
  for (const { operationId, method, path, op } of operations) {
    const secured = operationId in ALLOWED_ROLES;
    // The webhook intake reads its body only for a listener that exists (its own suite covers it).
    const takesJson = Boolean(op.requestBody?.content?.["application/json"]) && op["x-raw-request"] !== true;
    const name = operationId.replace(/^svc\.api\./, "");
    const query = queryOf(path, op);
    // An operation that requires an Idempotency-Key gets one, so that each request breaks the one rule it is about.
    const requiresKey = [...((contract.paths[path].parameters ?? []) as object[]), ...((op.parameters ?? []) as object[])]
      .map((p) => deref(p))
      .some((p) => p.in === "header" && p.name === "Idempotency-Key" && p.required === true);
    const keyHeader = (): Record<string, string> => (requiresKey ? { "Idempotency-Key": `documented-errors-${Math.random()}` } : {});
    const admin = async (): Promise<Record<string, string>> => (secured ? { Authorization: `Bearer ${await token(BOOTSTRAP)}`, ...keyHeader() } : keyHeader());

    if (secured) {
      it(`${name}: 401 without a token and with an expired one`, async () => {
        for (const auth of [{}, { Authorization: `Bearer ${expiredToken}` }] as Record<string, string>[]) {
          expect(documented(operationId, 401)).toContainEqual(await send(method, path, auth));
        }
      });
    }
    // A role that may not call it: a ROLE_USER, else an app's backend (which may call fewer operations than a user).
    const allowed = secured ? ALLOWED_ROLES[operationId as keyof typeof ALLOWED_ROLES] : [];
    const refusedToken = !allowed.includes("ROLE_USER") ? () => userToken : !allowed.includes("ROLE_APP_SERVICE") ? () => appServiceToken : undefined;
    if (secured && refusedToken) {
      it(`${name}: 403 for a role that may not call it`, async () => {
        expect(documented(operationId, 403)).toContainEqual(await send(method, path, { Authorization: `Bearer ${refusedToken()}` }));
      });
    }
    it(`${name}: 429 for a source address over its rate limit${secured ? ", and for a credential over its own" : ""}${op["x-raw-request"] === true ? ", for a listener over its own, and for an address over its failure budget on it" : ""}`, async () => {
      // A window later, every limit has its whole quota again.
      limited.clock.advance(1000);
      expect(documented(operationId, 429)).toContainEqual(await overTheLimit(method, path, {}, "203.0.113.1"));
      if (secured) expect(documented(operationId, 429)).toContainEqual(await overTheLimit(method, path, { Authorization: `Bearer ${limitedToken}` }));
      if (op["x-raw-request"] === true) {
        for (const answer of await overTheIntakeLimits(operationId, method, path)) expect(documented(operationId, 429)).toContainEqual(answer);
      }
    });
    if (takesJson) {
      it(`${name}: 413 for a body over the limit, 415 for a body that is not JSON`, async () => {
        const auth: Record<string, string> = secured ? { Authorization: `Bearer ${await token(BOOTSTRAP)}` } : {};
        const large = JSON.stringify({ padding: "x".repeat(2 * 1024 * 1024) });
        expect(documented(operationId, 413)).toContainEqual(await send(method, path, { ...auth, "Content-Type": "application/json" }, large));
        expect(documented(operationId, 415)).toContainEqual(await send(method, path, { ...auth, "Content-Type": "text/plain" }, "{}"));
      });

      it(`${name}: 400 for a JSON body that is not an object, null included`, async () => {
        const auth = await admin();
        for (const body of ["null", " null ", "5", '"x"', "true", "[]"]) {
          const answer = await send(method, path, { ...auth, "Content-Type": "application/json" }, body);
          expect(answer, body).toEqual({ status: 400, reason: "INVALID_ARGUMENT", message: "body: must be object" });
          expect(documented(operationId, 400)).toContainEqual(answer);
        }
      });
    }
    if (path.includes("{")) {
      it(`${name}: 400 MALFORMED_PATH for a path parameter that is not percent-encoded UTF-8, never echoed`, async () => {
        const auth = await admin();
        for (const bad of ["%c0%af", "%ff", "%e2%82"]) {
          const answer = await send(method, path, auth, takesJson ? "{}" : undefined, urlOf(path, bad));
          expect(answer, bad).toEqual({ status: 400, reason: "MALFORMED_PATH", message: "a path parameter is not valid percent-encoded UTF-8" });
          expect(documented(operationId, 400)).toContainEqual(answer);
        }
      });
    }
    if (query.includes("page_size")) {
      it(`${name}: 400 for a page_size not written as a decimal integer`, async () => {
        const auth = await admin();
        for (const bad of NOT_DECIMAL) {
          const answer = await send(method, path, auth, undefined, `${urlOf(path)}?page_size=${encodeURIComponent(bad)}`);
          expect(answer, JSON.stringify(bad)).toEqual({ status: 400, reason: "INVALID_ARGUMENT", message: "query.page_size: must be an integer in decimal digits, such as 25" });
          expect(documented(operationId, 400)).toContainEqual(answer);
        }
      });
    }
    if (query.includes("page_token")) {
      it(`${name}: 400 for a page_token given twice`, async () => {
        const answer = await send(method, path, await admin(), undefined, `${urlOf(path)}?page_token=&page_token=`);
        expect(answer).toEqual({ status: 400, reason: "INVALID_ARGUMENT", message: "query.page_token: must be given once" });
        expect(documented(operationId, 400)).toContainEqual(answer);
      });
    }
  }
});
