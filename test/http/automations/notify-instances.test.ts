// Notifications through real server processes on one database (SQLite, or PostgreSQL in that leg),
// with a short retry schedule and real time: a receiver down for a while, then up, gets every
// notification exactly once by `webhook-id`, while the instance that parked them is killed
// (SIGKILL) and another started, and over two instances; its destination's circuit opened on the
// way and closed once it answered. A receiver that never answers, sent many notifications, does not
// delay an unrelated automation's runs past a bound. Bulk redrive recovers a window of failures once.
import { once } from "node:events";
import http from "node:http";
import type net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { sendWebhookEvent } from "../../../src/client/webhook-sender.js";
import { destinationId } from "../../../src/automations/notification-destinations.js";
import { webhookErrors } from "../../support/contract.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { webhookTrigger } from "../../support/triggers.js";
import { automationsApi, type Execution, type Step } from "../webhooks/helpers.js";

const ADMIN = { clientId: "notify-instances-admin", clientSecret: "notify-instances-admin-secret-0123456789" };
const BASE_URL = "http://tenant.example.test";
/** How long after its acceptance an unrelated automation's run must be done, on a loaded machine. */
const UNRELATED_BOUND_MS = 5_000;

let cluster: Instances;
let clients: ApiClient[];

interface Receiver {
  up: boolean;
  /** The `webhook-id` of every request, and of every one answered 2xx. */
  requests: string[];
  delivered: string[];
  port: number;
}
const servers: http.Server[] = [];
/** What the receivers got that the contract's `notification` webhook does not declare. */
const drift: string[] = [];
afterEach(() => expect(drift.splice(0)).toEqual([]));

/** A receiver of its own (a destination of its own): `/up` answers 200 while `up`, else 503; `/gone` 404; `/silent` never answers. */
async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = { up: false, requests: [], delivered: [], port: 0 };
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith("/silent")) return;
    const id = String(req.headers["webhook-id"]);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      drift.push(...webhookErrors("notification", req.headers, Buffer.concat(chunks).toString("utf8")));
      receiver.requests.push(id);
      if (req.url?.startsWith("/gone") || !receiver.up) return void res.writeHead(req.url?.startsWith("/gone") ? 404 : 503).end();
      receiver.delivered.push(id);
      res.writeHead(200).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  servers.push(server);
  receiver.port = (server.address() as net.AddressInfo).port;
  return receiver;
}

beforeAll(async () => {
  cluster = await startInstances(2, ADMIN, BASE_URL, {
    RATE_LIMIT: "off",
    NOTIFICATION_ALLOW_INSECURE: "1",
    NOTIFY_RETRY_SCHEDULE: Array.from({ length: 20 }, () => "1s").join(","),
    NOTIFY_TIMEOUT_SECONDS: "1",
    NOTIFY_CIRCUIT_FAILURES: "3",
    NOTIFY_CIRCUIT_COOLDOWN_SECONDS: "1",
    EXECUTION_LEASE_SECONDS: "10",
  });
  clients = cluster.clients;
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  for (const server of servers) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((r) => server.close(r))));
}, 120_000);

async function automation(client: ApiClient, steps: Step[]) {
  const saved = unwrap(await automationsApi(client).create({ displayName: `notify ${Math.random()}`, isDraft: false, enabled: true, triggers: [{ webhook: { hmac: {} } }], automationSteps: steps }));
  const url = new URL(webhookTrigger(saved.automation)!.url!);
  return { id: saved.automation.id!, path: url.pathname, secret: saved.webhookSecret! };
}

const notifyStep = (receiver: Receiver, path: string): Step => ({ stepName: "tell", notify: { url: `http://127.0.0.1:${receiver.port}${path}`, bodyCel: '{"n": ctx.trigger.n}' } }) as Step;

/** Sends an event to the automation through instance `via`; answers its execution's id. */
async function send(via: string, hook: { path: string; secret: string }, n: number): Promise<string> {
  const sent = await sendWebhookEvent({ url: via + hook.path, body: JSON.stringify({ n }), auth: { hmac: { secret: hook.secret } } });
  expect(sent.status).toBe(200);
  return (sent.response as { webhookEvent: { automationExecutionId: string } }).webhookEvent.automationExecutionId;
}

const execution = async (client: ApiClient, id: string): Promise<Execution> => unwrap(await client.GET("/api/v1/automation_executions/{id}", { params: { path: { id } } })).automationExecution;

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await read();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const finished = (client: ApiClient, ids: string[]) =>
  until(`${ids.length} executions to finish`, async () => {
    const all = await Promise.all(ids.map((id) => execution(client, id)));
    return all.every((e) => e.state === "AUTOMATION_EXECUTION_STATE_DONE" || e.state === "AUTOMATION_EXECUTION_STATE_ERROR") ? all : undefined;
  });

describe(`notifications over server processes on ${testDialect()}`, () => {
  it("a receiver down, then up, gets every notification exactly once by webhook-id, across a SIGKILL of the instance that parked them and a new instance; the circuit opened and closed", async () => {
    const receiver = await startReceiver();
    const hook = await automation(clients[0]!, [notifyStep(receiver, "/up")]);
    const ids: string[] = [];
    for (let n = 0; n < 12; n++) ids.push(await send(cluster.instances[n % 2]!.url, hook, n));
    // Every execution parked (after an attempt, or behind the circuit its failures opened), on either instance.
    const destination = destinationId(`127.0.0.1:${receiver.port}`);
    await until("the executions to park and the circuit to open", async () => {
      const states = await Promise.all(ids.map(async (id) => (await execution(clients[1]!, id)).state));
      const answer = await clients[1]!.GET("/api/v1/notification-destinations/{destination_id}", { params: { path: { destination_id: destination } } });
      const failures = answer.data?.notificationDestination.consecutiveFailures ?? 0;
      return states.every((s) => s === "AUTOMATION_EXECUTION_STATE_PARKED") && failures >= 3 ? true : undefined;
    });

    cluster.instances[0]!.child.kill("SIGKILL");
    await once(cluster.instances[0]!.child, "exit");
    const restarted = await cluster.add();
    receiver.up = true;
    const ends = await finished(restarted.client, ids);
    for (const e of ends) expect(e.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    const expected = ids.map((id) => `${id}_tell`).sort();
    expect([...receiver.delivered].filter((id) => expected.includes(id)).sort()).toEqual(expected);
    const healthy = unwrap(await restarted.client.GET("/api/v1/notification-destinations/{destination_id}", { params: { path: { destination_id: destination } } })).notificationDestination;
    expect(healthy).toMatchObject({ state: "NOTIFICATION_DESTINATION_STATE_HEALTHY", consecutiveFailures: 0 });
  }, 180_000);

  it("a receiver that never answers, sent 40 notifications, does not delay an unrelated automation's runs past a bound", async () => {
    const via = cluster.instances[1]!.url;
    const silent = await automation(clients[1]!, [notifyStep(await startReceiver(), "/silent")]);
    const unrelated = await automation(clients[1]!, [{ stepName: "calc", evaluateExpressions: { expressions: [{ name: "n", expression: "ctx.trigger.n + 1.0" }] } } as Step]);
    for (let n = 0; n < 40; n++) await send(via, silent, n);
    const ids: string[] = [];
    for (let n = 0; n < 10; n++) {
      ids.push(await send(via, unrelated, n));
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const e of await finished(clients[1]!, ids)) {
      expect(e.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
      expect(Date.parse(e.completedAt!) - Date.parse(e.createdAt)).toBeLessThan(UNRELATED_BOUND_MS);
    }
  }, 120_000);

  it("bulk redrive recovers a window of failures once", async () => {
    const client = clients[1]!;
    const receiver = await startReceiver();
    receiver.up = true;
    const hook = await automation(client, [notifyStep(receiver, "/gone")]);
    const since = new Date(Date.now() - 1_000).toISOString();
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push(await send(cluster.instances[1]!.url, hook, n));
    for (const e of await finished(client, ids)) expect(e.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    // Fixed: the step now posts where the receiver answers.
    unwrap(await automationsApi(client).update(hook.id, { displayName: "fixed", automationSteps: [notifyStep(receiver, "/up")] }, "displayName,automationSteps"));
    await new Promise((r) => setTimeout(r, 50));
    const window = { since, until: new Date().toISOString(), includeParked: true };
    const first = unwrap(await client.POST("/api/v1/automations/{id}/executions/redrive", { params: { path: { id: hook.id } }, body: window }));
    expect(first).toMatchObject({ redrivenCount: 5, alreadyRedrivenCount: 0 });
    const again = unwrap(await client.POST("/api/v1/automations/{id}/executions/redrive", { params: { path: { id: hook.id } }, body: window }));
    expect(again).toMatchObject({ redrivenCount: 0, alreadyRedrivenCount: 5 });
    const redrives = await until("the redrives", async () => {
      const failed = await Promise.all(ids.map((id) => execution(client, id)));
      return failed.every((e) => e.redrivenBy) ? failed.map((e) => e.redrivenBy!) : undefined;
    });
    for (const e of await finished(client, redrives)) expect(e.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    for (const id of redrives) expect(receiver.delivered.filter((d) => d === `${id}_tell`)).toHaveLength(1);
  }, 120_000);
});
