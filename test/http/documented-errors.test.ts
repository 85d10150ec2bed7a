// Every operation answers the errors its contract documents for every caller alike: no token, an
// expired token, a role that may not call it, a body over the limit, a body that is not JSON. Each
// request goes over real HTTP, and each answer must be one of the operation's documented examples
// (status, reason and message), so a partner reading the examples sees what the server says.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALLOWED_ROLES } from "../../src/identity/roles.js";
import { declaredErrors } from "../support/declared-errors.js";
import { operations } from "../support/contract.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../support/server.js";

let ts: TestServer;
let userToken: string;
let expiredToken: string;

const token = async (credentials: { clientId: string; clientSecret: string }): Promise<string> => {
  const answer = await fetch(`${ts.url}/auth/v1/token`, {
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
});
afterAll(async () => ts?.stop());

/** A URL of the operation, its path parameters filled with well-formed ids. */
const urlOf = (path: string) => ts.url + path.replace(/\{[a-z_]+\}/g, "doc-errors-1");

async function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  const answer = await fetch(urlOf(path), { method: method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) });
  const json = (await answer.json()) as { message: string; details: { reason?: string }[] };
  return { status: answer.status, reason: json.details.find((d) => d.reason)?.reason, message: json.message };
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
