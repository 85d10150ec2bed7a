// Several stateless instances on one database, as behind a load balancer: three server processes
// share nothing but the database (and the configured secrets key). Idempotency, execution claiming,
// access tokens and page tokens must hold across them.
import { randomUUID } from "node:crypto";
import SQLite from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { sendWebhookEvent } from "../../../src/client/webhook-sender.js";
import { testDialect, type TestDatabase } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import type { Served } from "../../support/process.js";
import { webhookTrigger } from "../../support/triggers.js";

const ADMIN = { clientId: "multi-admin", clientSecret: "multi-admin-secret-0123456789" };
const BASE_URL = "http://tenant.example.test";

let cluster: Instances | undefined;
let database: TestDatabase;
let instances: Served[] = [];
let clients: ApiClient[] = [];

beforeAll(async () => {
  cluster = await startInstances(3, ADMIN, BASE_URL);
  ({ database, instances, clients } = cluster);
}, 120_000);

afterAll(async () => cluster?.stop());

const tokenRequest = (url: string, clientId: string, clientSecret: string) =>
  fetch(`${url}/auth/v1/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret }),
  });

async function token(url: string): Promise<string> {
  const r = await tokenRequest(url, ADMIN.clientId, ADMIN.clientSecret);
  expect(r.status).toBe(200);
  return ((await r.json()) as { access_token: string }).access_token;
}

async function publishedHmacAutomation(): Promise<{ id: string; path: string; secret: string }> {
  const created = unwrap(
    await clients[0]!.POST("/api/v1/automations", {
      body: {
        automation: {
          displayName: `multi ${randomUUID()}`,
          isDraft: false,
          enabled: true,
          triggers: [{ webhook: { hmac: {} } }],
          automationSteps: [{ stepName: "calc", evaluateExpressions: { expressions: [{ name: "n", expression: "ctx.trigger.n * 2.0" }] } }],
        },
      },
    }),
  );
  const url = new URL(webhookTrigger(created.automation)!.url!);
  expect(url.origin).toBe(BASE_URL);
  return { id: created.automation.id!, path: url.pathname, secret: created.webhookSecret! };
}

/** Waits until every execution of the automation has finished, across all instances. */
async function finished(automationId: string, expected: number): Promise<Array<{ state?: string }>> {
  for (let i = 0; i < 300; i++) {
    const all: Array<{ state?: string }> = [];
    let token = "";
    do {
      const page = unwrap(await clients[i % 3]!.GET("/api/v1/automation_executions", { params: { query: { automation_id: automationId, page_size: 100, ...(token ? { page_token: token } : {}) } } }));
      all.push(...page.list.map((e) => e.automationExecution));
      token = page.nextPageToken;
    } while (token);
    if (all.length >= expected && all.every((e) => e.state === "AUTOMATION_EXECUTION_STATE_DONE" || e.state === "AUTOMATION_EXECUTION_STATE_ERROR")) return all;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("executions did not finish");
}

describe(`three instances on one ${testDialect()} database`, () => {
  it("a token from one instance works on the others", async () => {
    const t = await token(instances[0]!.url);
    for (const s of instances) {
      const r = await fetch(`${s.url}/api/v1/users`, { headers: { Authorization: `Bearer ${t}` } });
      expect(r.status).toBe(200);
    }
  });

  it("the bootstrap admin, migrations and the signing key were created once", async () => {
    const users = unwrap(await clients[1]!.GET("/api/v1/users", { params: { query: { page_size: 100 } } }));
    expect(users.list.filter((u) => u.user.roles?.includes("ROLE_SUPER_ADMIN"))).toHaveLength(1);
  });

  it("the token throttle counts failures across instances: five guesses spread over them, then 429 from each", async () => {
    const clientId = `nobody-${randomUUID()}`;
    for (let i = 0; i < 5; i++) expect((await tokenRequest(instances[i % instances.length]!.url, clientId, `guess-${i}`)).status).toBe(401);
    for (const s of instances) expect((await tokenRequest(s.url, clientId, "guess-again")).status).toBe(429);
  });

  it("a page token from one instance continues on another", async () => {
    for (let i = 0; i < 12; i++) unwrap(await clients[i % 3]!.POST("/api/v1/users", { body: { displayName: `U${i}`, email: `multi${i}@example.com`, roles: ["ROLE_USER"] } }));
    const first = unwrap(await clients[0]!.GET("/api/v1/users", { params: { query: { page_size: 10 } } }));
    expect(first.nextPageToken).not.toBe("");
    const second = unwrap(await clients[1]!.GET("/api/v1/users", { params: { query: { page_size: 10, page_token: first.nextPageToken } } }));
    const third = second.nextPageToken ? unwrap(await clients[2]!.GET("/api/v1/users", { params: { query: { page_size: 10, page_token: second.nextPageToken } } })) : { list: [], nextPageToken: "" };
    const ids = [...first.list, ...second.list, ...third.list].map((u) => u.user.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(13);
  });

  it("30 concurrent deliveries of one event id spread across instances: one 200, one execution", async () => {
    const automation = await publishedHmacAutomation();
    const eventId = randomUUID();
    const body = JSON.stringify({ n: 21 });
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        sendWebhookEvent({ url: instances[i % 3]!.url + automation.path, body, eventId, auth: { hmac: { secret: automation.secret } } }).then((r) => r.status),
      ),
    );
    expect(answers.filter((s) => s === 200)).toHaveLength(1);
    expect(answers.filter((s) => s === 409)).toHaveLength(29);
    const executions = await finished(automation.id, 1);
    expect(executions).toHaveLength(1);
  });

  it("300 distinct events spread across instances: 300 executions, each claimed and run once", async () => {
    const automation = await publishedHmacAutomation();
    const statuses: number[] = [];
    for (let batch = 0; batch < 10; batch++) {
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            sendWebhookEvent({ url: instances[i % 3]!.url + automation.path, body: JSON.stringify({ n: batch * 30 + i }), auth: { hmac: { secret: automation.secret } } }).then((r) => r.status),
          ),
        )),
      );
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    const executions = await finished(automation.id, 300);
    expect(executions).toHaveLength(300);
    expect(executions.every((e) => e.state === "AUTOMATION_EXECUTION_STATE_DONE")).toBe(true);
    // Claimed once each: no execution was taken by two workers, nor resumed.
    const query = "select attempts, count(*) as n from automation_executions where automation_id = $1 group by attempts";
    let rows: Array<{ attempts: number; n: number }>;
    if (testDialect() === "postgres") {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      rows = (await client.query<{ attempts: number; n: string }>(query, [automation.id])).rows.map((r) => ({ attempts: r.attempts, n: Number(r.n) }));
      await client.end();
    } else {
      const file = new SQLite(database.url.slice("sqlite:".length), { readonly: true });
      rows = file.prepare(query.replace("$1", "?")).all(automation.id) as typeof rows;
      file.close();
    }
    expect(rows).toEqual([{ attempts: 1, n: 300 }]);
  }, 120_000);
});
