// Destination health through HTTP, on the test database's dialect: consecutive failures open a
// destination's circuit (executions stay parked, no attempt made, until its cool-down passes; then
// one trial, which closes it or opens it again), a destination failing for the configured period is
// disabled by the execution whose attempt failed last (audited; its notifications fail at once),
// a super admin enables it again (audited) and disables one by hand; List, Get, and who may call
// them. A receiver of the test's on loopback per test, so each test has a destination of its own;
// the test's clock moves through the waits.
import { once } from "node:events";
import http from "node:http";
import type net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { paginate, unwrap } from "../../../src/client/index.js";
import { destinationId } from "../../../src/automations/notification-destinations.js";
import { webhookErrors } from "../../support/contract.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { expectError, type Schemas } from "../limits/helpers.js";
import { automationsApi, createHooked, expectAccepted, sendHmac, settled, type Execution } from "../webhooks/helpers.js";

const COOLDOWN_S = 20;
const DISABLE_AFTER_S = 90;

let ts: TestServer;
const receivers: http.Server[] = [];
/** What the receivers got that the contract's `notification` webhook does not declare. */
const drift: string[] = [];
afterEach(() => expect(drift.splice(0)).toEqual([]));

beforeAll(async () => {
  ts = await startTestServer({
    NOTIFICATION_ALLOW_INSECURE: "1",
    NOTIFY_RETRY_SCHEDULE: "1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s",
    NOTIFY_TIMEOUT_SECONDS: "0.5",
    NOTIFY_CIRCUIT_FAILURES: "3",
    NOTIFY_CIRCUIT_COOLDOWN_SECONDS: String(COOLDOWN_S),
    NOTIFY_DISABLE_AFTER_SECONDS: String(DISABLE_AFTER_S),
  });
});

afterAll(async () => {
  await ts?.stop();
  await Promise.all(receivers.map((r) => new Promise((done) => r.close(done))));
});

type Destination = Schemas["NotificationDestination"];

/** A receiver answering 503 while `down`, else 200; and an automation notifying it. */
async function setUp() {
  const receiver = { down: true, requests: 0, server: undefined as unknown as http.Server, destination: "" };
  receiver.server = http.createServer((req, res) => {
    receiver.requests++;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      drift.push(...webhookErrors("notification", req.headers, Buffer.concat(chunks).toString("utf8")));
      res.writeHead(receiver.down ? 503 : 200).end();
    });
  });
  receiver.server.listen(0, "127.0.0.1");
  await once(receiver.server, "listening");
  receivers.push(receiver.server);
  receiver.destination = `127.0.0.1:${(receiver.server.address() as net.AddressInfo).port}`;
  const hook = await createHooked(ts, { steps: [{ stepName: "tell", notify: { url: `http://${receiver.destination}/hook`, bodyCel: '{"n": ctx.trigger.n}' } }] as never });
  const send = async (n: number) => expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ n }))).automationExecutionId!;
  return { receiver, hook, send, id: destinationId(receiver.destination) };
}

const getDestination = (id: string) => ts.admin.GET("/api/v1/notification-destinations/{destination_id}", { params: { path: { destination_id: id } } });
const destination = async (id: string): Promise<Destination> => unwrap(await getDestination(id)).notificationDestination;
const post = (id: string, action: "enable" | "disable") => ts.admin.POST(`/api/v1/notification-destinations/{destination_id}/${action}`, { params: { path: { destination_id: id } }, body: {} });
const attemptsOf = (e: Execution) => ((e.stepResults[0]!.output as { attempts?: Array<{ status: number | null }> } | null)?.attempts ?? []).length;

/** The execution after its next run: the clock moved to its next attempt first, when it is parked. */
async function next(executionId: string): Promise<Execution> {
  const now = await settled(ts, executionId);
  if (now.state === "AUTOMATION_EXECUTION_STATE_PARKED") ts.clock.set(Math.max(ts.clock.now(), Date.parse(now.nextAttemptAt!)));
  ts.server.worker.notify();
  return settled(ts, executionId);
}

describe("the circuit", () => {
  it("opens after consecutive failures: executions park without an attempt until the cool-down passes; a trial that gets an answer closes it", async () => {
    const { receiver, send, id } = await setUp();
    expectError(await getDestination(id), 404, "NOTIFICATION_DESTINATION_NOT_FOUND");
    const first = await send(1);
    let execution = await settled(ts, first);
    expect(await destination(id)).toMatchObject({ destination: receiver.destination, state: "NOTIFICATION_DESTINATION_STATE_FAILING", consecutiveFailures: 1, lastError: "HTTP 503", circuitOpenUntil: null });
    execution = await next(first);
    execution = await next(first);
    expect(attemptsOf(execution)).toBe(3);
    const open = await destination(id);
    expect(open).toMatchObject({ state: "NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN", consecutiveFailures: 3 });
    expect(Date.parse(open.circuitOpenUntil!)).toBe(ts.clock.now() + COOLDOWN_S * 1000);

    // Due again within the cool-down: parked until it ends, no attempt made. So is a new execution.
    execution = await next(first);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_PARKED");
    expect(attemptsOf(execution)).toBe(3);
    expect(Date.parse(execution.nextAttemptAt!)).toBeGreaterThanOrEqual(Date.parse(open.circuitOpenUntil!));
    const second = await send(2);
    const waiting = await settled(ts, second);
    expect(waiting).toMatchObject({ state: "AUTOMATION_EXECUTION_STATE_PARKED" });
    expect(attemptsOf(waiting)).toBe(0);
    expect(receiver.requests).toBe(3);

    // The cool-down over, the receiver up: the trial delivers and closes the circuit; the other follows.
    receiver.down = false;
    execution = await next(first);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(attemptsOf(execution)).toBe(4);
    expect(await destination(id)).toMatchObject({ state: "NOTIFICATION_DESTINATION_STATE_HEALTHY", consecutiveFailures: 0, failingSince: null, circuitOpenUntil: null, lastError: "HTTP 503" });
    expect((await next(second)).state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(receiver.requests).toBe(5);
  });

  it("a trial that fails opens it again for another cool-down", async () => {
    const { receiver, send, id } = await setUp();
    const executionId = await send(1);
    await settled(ts, executionId);
    await next(executionId);
    await next(executionId);
    const opened = Date.parse((await destination(id)).circuitOpenUntil!);
    await next(executionId); // parked until the circuit closes
    await next(executionId); // the trial
    expect(receiver.requests).toBe(4);
    const again = await destination(id);
    expect(again).toMatchObject({ state: "NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN", consecutiveFailures: 4 });
    expect(Date.parse(again.circuitOpenUntil!)).toBeGreaterThanOrEqual(opened + COOLDOWN_S * 1000);
  });
});

describe("disabling", () => {
  it("a destination failing for the period is disabled by the execution that failed last (audited); its notifications fail at once until a super admin enables it (audited)", async () => {
    const { receiver, send, id } = await setUp();
    const executionId = await send(1);
    const started = ts.clock.now();
    let execution = await settled(ts, executionId);
    for (let turns = 0; execution.state === "AUTOMATION_EXECUTION_STATE_PARKED" && turns < 40; turns++) execution = await next(executionId);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(execution.stepResults[0]!.error).toMatch(new RegExp(`; its destination ${receiver.destination.replace(/\./g, "\\.")} is disabled now, after failing for too long$`));
    expect(ts.clock.now() - started).toBeGreaterThanOrEqual(DISABLE_AFTER_S * 1000);
    const disabled = await destination(id);
    expect(disabled).toMatchObject({ state: "NOTIFICATION_DESTINATION_STATE_DISABLED", disabledAt: new Date(ts.clock.now()).toISOString() });

    const audit = unwrap(await ts.admin.GET("/api/v1/audit-events", { params: { query: { target_kind: "AUDIT_TARGET_KIND_NOTIFICATION_DESTINATION", target_id: id } } })).list.map((v) => v.auditEvent);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ operationId: "svc.api.automations.v1.NotificationDestinationService.Disable", actor: { kind: "AUDIT_ACTOR_KIND_AUTOMATION_EXECUTION", executionId }, after: disabled });

    // Disabled: a new notification fails at once, nothing sent.
    const requests = receiver.requests;
    const refused = await settled(ts, await send(2));
    expect(refused.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(refused.stepResults[0]!.error).toBe(`notification not sent: its destination ${receiver.destination} is disabled (since ${disabled.disabledAt}); a super admin enables it again with NotificationDestinationService.Enable`);
    expect(receiver.requests).toBe(requests);

    // Enabled again: healthy, audited, and the next notification goes.
    const enabled = unwrap(await post(id, "enable")).notificationDestination;
    expect(enabled).toMatchObject({ state: "NOTIFICATION_DESTINATION_STATE_HEALTHY", disabledAt: null, consecutiveFailures: 0 });
    const enabledAudit = unwrap(await ts.admin.GET("/api/v1/audit-events", { params: { query: { target_kind: "AUDIT_TARGET_KIND_NOTIFICATION_DESTINATION", target_id: id, operation_id: "svc.api.automations.v1.NotificationDestinationService.Enable" } } })).list;
    expect(enabledAudit.map((v) => v.auditEvent)).toEqual([expect.objectContaining({ before: disabled, after: enabled, actor: expect.objectContaining({ kind: "AUDIT_ACTOR_KIND_USER" }) })]);
    receiver.down = false;
    expect((await settled(ts, await send(3))).state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
  });

  it("a super admin disables one by hand; a call that changes nothing records nothing", async () => {
    const { send, id } = await setUp();
    await settled(ts, await send(1));
    const disabled = unwrap(await post(id, "disable")).notificationDestination;
    expect(disabled.state).toBe("NOTIFICATION_DESTINATION_STATE_DISABLED");
    expect(unwrap(await post(id, "disable")).notificationDestination).toEqual(disabled);
    const events = unwrap(await ts.admin.GET("/api/v1/audit-events", { params: { query: { target_kind: "AUDIT_TARGET_KIND_NOTIFICATION_DESTINATION", target_id: id } } })).list;
    expect(events).toHaveLength(1);
  });
});

describe("List, Get and who may call them", () => {
  it("lists every destination that failed, by id, in pages; unknown ids are 404; only a super admin may call them", async () => {
    const made = [await setUp(), await setUp()];
    for (const m of made) await settled(ts, await m.send(1));
    const listed: Destination[] = [];
    for await (const item of paginate((page_token) => ts.admin.GET("/api/v1/notification-destinations", { params: { query: { page_size: 10, page_token } } }).then(unwrap))) listed.push(item.notificationDestination);
    const ids = listed.map((d) => d.id);
    expect(ids).toEqual([...ids].sort());
    for (const m of made) expect(ids).toContain(m.id);

    expectError(await getDestination("dst_000000000000000000000000"), 404, "NOTIFICATION_DESTINATION_NOT_FOUND");
    expectError(await post("dst_000000000000000000000000", "enable"), 404, "NOTIFICATION_DESTINATION_NOT_FOUND");
    const fundAdmin = await ts.userClient(["ROLE_FUND_ADMIN"]);
    expectError(await fundAdmin.client.GET("/api/v1/notification-destinations"), 403);
    expectError(await fundAdmin.client.POST(`/api/v1/notification-destinations/{destination_id}/enable`, { params: { path: { destination_id: made[0]!.id } }, body: {} }), 403);
  });
});
