// The `notify` step through HTTP, on a server started as in production (NOTIFICATION_ALLOW_INSECURE
// off): a real HTTPS receiver (the self-signed certificate of test/fixtures/tls, for its name, given
// to the server as an extra CA) on 127.0.0.2, the one address the server is told to treat as public,
// checks every notification's Standard Webhooks signature with an implementation of its own, written
// from the specification, and its headers and body against the contract's webhook. Retries on the
// schedule, parked in between (503 then 200, 429 and its Retry-After), a receiver that never answers,
// the cap of requests in flight to one destination, a final 4xx,
// URLs refused at save and names refused at send (`localhost`: a counter on 127.0.0.1 stands for the
// internal network and must see no connection), the body's bound, the secret's rotation, and that
// the secret reaches no log, step result or error. A second server with the development flag posts
// over plain http to 127.0.0.1.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { LookupAddress } from "node:dns";
import { lookup } from "node:dns/promises";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { webhookErrors } from "../../support/contract.js";
import { bootstrapToken, logCapture, startTestServer, type TestServer } from "../../support/server.js";
import { expectError, funds, newAppId } from "../limits/helpers.js";
import { eventOf, fundAutomation, settledExecutions } from "./fund-events-helpers.js";
import { automationsApi, createHooked, expectAccepted, finished, sendHmac, settled, type Execution, type Hooked, type Step } from "../webhooks/helpers.js";

/** The name the fixture's certificate is for; resolved by the test's DNS to the stand-in address. */
const PUBLIC_NAME = "jwks.example.test";
const STAND_IN = "127.0.0.2";
const tlsFixture = (ext: string) => readFileSync(new URL(`../../fixtures/tls/jwks-example-test.${ext}`, import.meta.url));
/**
 * Three attempts after the first, 5, 10 and 20 s after the one before (the test's clock moves); 0.8 s
 * each. Every test posts to the one receiver: its circuit never opens here (destination-health.test.ts).
 */
const DELIVERY = { NOTIFY_RETRY_SCHEDULE: "5s,10s,20s", NOTIFY_TIMEOUT_SECONDS: "0.8", NOTIFY_MAX_IN_FLIGHT_PER_DESTINATION: "2", NOTIFY_CIRCUIT_FAILURES: "1000" };
const GRACE_SECONDS = 3600;

const NAMES: Record<string, LookupAddress[]> = {
  [PUBLIC_NAME]: [{ address: STAND_IN, family: 4 }],
  "private.notify.test": [{ address: "10.0.0.1", family: 4 }],
  "mixed.notify.test": [
    { address: "93.184.216.34", family: 4 },
    { address: "127.0.0.1", family: 4 },
  ],
};
const resolve = async (hostname: string): Promise<LookupAddress[]> => NAMES[hostname] ?? lookup(hostname, { all: true });

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let ts: TestServer;
let logs: ReturnType<typeof logCapture>;
let receiver: { port: number; server: https.Server; received: Received[]; sockets: Set<net.Socket> };
let internal: { port: number; connections: number; server: net.Server };
/** Where a notification received differs from the contract's `notification` request: checked after each test. */
const drift: string[] = [];
/** Every notification secret an answer showed. */
const shown: string[] = [];

/** Answers by path: `/ok` 200, `/flaky` 503 then 200, `/busy` 429 (Retry-After: 60) then 204 (per webhook-id), `/gone` 404, `/slow` never. */
function answer(req: http.IncomingMessage, res: http.ServerResponse, received: Received[]): void {
  const path = new URL(req.url ?? "/", "https://receiver").pathname;
  const seen = received.filter((r) => r.path === path && r.headers["webhook-id"] === req.headers["webhook-id"]).length;
  switch (path) {
    case "/ok":
      return void res.writeHead(200, { "content-type": "text/plain" }).end("thanks\u0007 " + "x".repeat(10_000));
    case "/flaky":
      return void (seen === 1 ? res.writeHead(503).end("try later") : res.writeHead(200).end("ok"));
    case "/busy":
      return void (seen === 1 ? res.writeHead(429, { "retry-after": "60" }).end() : res.writeHead(204).end());
    case "/gone":
      return void res.writeHead(404).end("no such hook");
    case "/slow":
      return; // never answers
    default:
      return void res.writeHead(500).end();
  }
}

beforeAll(async () => {
  const counter = { port: 0, connections: 0, server: net.createServer((s) => (counter.connections++, s.destroy())) };
  counter.server.listen(0, "127.0.0.1");
  await once(counter.server, "listening");
  counter.port = (counter.server.address() as net.AddressInfo).port;
  internal = counter;

  const host = { port: 0, received: [] as Received[], sockets: new Set<net.Socket>() } as typeof receiver;
  host.server = https.createServer({ key: tlsFixture("key"), cert: tlsFixture("crt") }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      host.received.push({ path: new URL(req.url ?? "/", "https://receiver").pathname, headers: req.headers, body });
      drift.push(...webhookErrors("notification", req.headers, body).map((e) => `${String(req.headers["webhook-id"])}: ${e}`));
      answer(req, res, host.received);
    });
  });
  host.server.on("connection", (s: net.Socket) => (host.sockets.add(s), s.on("close", () => host.sockets.delete(s))));
  host.server.listen(0, STAND_IN);
  await once(host.server, "listening");
  host.port = (host.server.address() as net.AddressInfo).port;
  receiver = host;

  logs = logCapture();
  ts = await startTestServer({ NOTIFICATION_ALLOW_INSECURE: "0", WEBHOOK_SECRET_GRACE_SECONDS: String(GRACE_SECONDS), LOG_LEVEL: "debug", ...DELIVERY }, logs.stream, {
    notifications: { resolve, ca: tlsFixture("crt"), exemptAddresses: [STAND_IN] },
  });
});

afterEach(() => {
  expect(drift.splice(0), "notifications sent as the contract's webhooks declare").toEqual([]);
});

afterAll(async () => {
  await ts?.stop();
  for (const s of receiver?.sockets ?? []) s.destroy();
  await Promise.all([receiver?.server, internal?.server].filter(Boolean).map((s) => new Promise((r) => s!.close(r))));
});

const urlOf = (path: string) => `https://${PUBLIC_NAME}:${receiver.port}${path}`;
const notifyStep = (url: string, bodyCel = '{"type": "card.lost", "userId": ctx.trigger.userId}'): Step => ({ stepName: "tell", notify: { url, bodyCel } }) as Step;

/** An automation with one notify step, and its notification secret (shown once, by the create). */
async function notifying(url: string, bodyCel?: string): Promise<Hooked & { notificationSecret: string }> {
  const api = automationsApi(ts.admin);
  const hook = await createHooked(ts);
  const saved = unwrap(await api.update(hook.id, { displayName: "x", automationSteps: [notifyStep(url, bodyCel)] }, "automationSteps"));
  expect(saved.notificationSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  shown.push(saved.notificationSecret!);
  return { ...hook, notificationSecret: saved.notificationSecret! };
}

/** The execution an event starts, run to its end (the clock moved to each of its next attempts). */
async function run(hook: Hooked, payload: unknown = { userId: "u-1" }): Promise<Execution> {
  return (await runParked(hook, payload)).execution;
}

async function runParked(hook: Hooked, payload: unknown = { userId: "u-1" }) {
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify(payload)));
  return finished(ts, event.automationExecutionId!);
}

/** Standard Webhooks verification, from the specification: every `v1,` signature of the header that the secret's bytes make for `{id}.{timestamp}.{body}`. */
function verifiedBy(secret: string, message: Received): boolean[] {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const content = `${String(message.headers["webhook-id"])}.${String(message.headers["webhook-timestamp"])}.${message.body}`;
  const expected = createHmac("sha256", key).update(content).digest();
  return String(message.headers["webhook-signature"])
    .split(" ")
    .map((entry) => {
      const [version, sig] = entry.split(",");
      const given = Buffer.from(sig ?? "", "base64");
      return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

const receivedFor = (execution: Execution) => receiver.received.filter((r) => r.headers["webhook-id"] === `${execution.id}_tell`);
const stepOf = (execution: Execution) => execution.stepResults[0]!;
const attemptsOf = (execution: Execution) => (stepOf(execution).output as { attempts: Array<Record<string, unknown>> }).attempts;

describe("notify: delivery", () => {
  it("POSTs the CEL body, signed as Standard Webhooks sign; the receiver's own verification accepts it; the attempt is in the step's output", async () => {
    const hook = await notifying(urlOf("/ok"));
    const execution = await run(hook, { userId: "ada" });
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    const [message, ...more] = receivedFor(execution);
    expect(more).toEqual([]);
    expect(message!.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(message!.body)).toEqual({ type: "card.lost", userId: "ada" });
    expect(message!.headers["webhook-id"]).toBe(`${execution.id}_tell`);
    expect(message!.headers["webhook-timestamp"]).toBe(String(Math.floor(ts.clock.now() / 1000)));
    expect(verifiedBy(hook.notificationSecret, message!)).toEqual([true]);
    expect(verifiedBy(`whsec_${Buffer.alloc(32, 1).toString("base64")}`, message!)).toEqual([false]);

    const step = stepOf(execution);
    expect(step.state).toBe("STEP_STATE_DONE");
    expect(step.output).toMatchObject({ webhookId: `${execution.id}_tell`, delivered: true });
    const [attempt] = attemptsOf(execution);
    expect(attempt).toMatchObject({ attempt: 1, waitedMs: 0, status: 200, error: null });
    // A bounded excerpt of the answer, control characters replaced.
    expect(attempt!.responseExcerpt).toBe("thanks  " + "x".repeat(248));
    expect(typeof attempt!.durationMs).toBe("number");
  });

  it("the step is shown as saved, and the secret is shown once: a later save keeps it and answers null", async () => {
    const api = automationsApi(ts.admin);
    const hook = await notifying(urlOf("/ok"));
    const shown = unwrap(await api.get(hook.id)).automation.automationSteps![0];
    expect(shown).toEqual({ stepName: "tell", skipIfTrueCel: "", evaluateExpressions: null, suspendAppLimit: null, unsuspendAppLimit: null, setAppLimitExtension: null, notify: { url: urlOf("/ok"), bodyCel: '{"type": "card.lost", "userId": ctx.trigger.userId}' } });
    const again = unwrap(await api.update(hook.id, { displayName: "x", automationSteps: [notifyStep(urlOf("/ok"), '{"n": 2}')] }, "automationSteps"));
    expect(again.notificationSecret).toBeNull();
    const execution = await run(hook);
    expect(verifiedBy(hook.notificationSecret, receivedFor(execution)[0]!)).toEqual([true]);
  });

  it("503 then 200: parked, holding no worker, then tried again on the schedule with the same webhook-id, each attempt recorded and signed", async () => {
    const hook = await notifying(urlOf("/flaky"));
    const before = ts.clock.now();
    const { execution, parked } = await runParked(hook);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(execution.nextAttemptAt).toBeNull();
    // Between the attempts: parked until 5 s (and up to a fifth more, at random) after the first, its attempt shown.
    expect(parked).toHaveLength(1);
    const [waiting] = parked;
    expect(waiting!.completedAt).toBeNull();
    expect(stepOf(waiting!)).toMatchObject({ state: "STEP_STATE_PENDING", error: null, output: { webhookId: `${execution.id}_tell`, delivered: false } });
    expect(attemptsOf(waiting!)).toEqual([expect.objectContaining({ attempt: 1, status: 503 })]);
    const wait = Date.parse(waiting!.nextAttemptAt!) - before;
    expect(wait).toBeGreaterThanOrEqual(5_000);
    expect(wait).toBeLessThanOrEqual(6_000);
    const messages = receivedFor(execution);
    expect(messages).toHaveLength(2);
    expect(new Set(messages.map((m) => m.headers["webhook-id"]))).toEqual(new Set([`${execution.id}_tell`]));
    for (const m of messages) expect(verifiedBy(hook.notificationSecret, m)).toEqual([true]);
    const [first, second] = attemptsOf(execution);
    expect(first).toMatchObject({ attempt: 1, waitedMs: 0, status: 503, error: "HTTP_STATUS", responseExcerpt: "try later" });
    expect(second).toMatchObject({ attempt: 2, waitedMs: 5_000, status: 200, error: null });
  });

  it("429 is tried again too, no sooner than its Retry-After when that is longer than the schedule's wait", async () => {
    const hook = await notifying(urlOf("/busy"));
    const before = ts.clock.now();
    const { execution, parked } = await runParked(hook);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(attemptsOf(execution).map((a) => a.status)).toEqual([429, 204]);
    const wait = Date.parse(parked[0]!.nextAttemptAt!) - before;
    expect(wait).toBeGreaterThanOrEqual(60_000);
    expect(wait).toBeLessThanOrEqual(72_000);
  });

  it("a 4xx other than 408 and 429 is final: one attempt, the step and the execution fail", async () => {
    const hook = await notifying(urlOf("/gone"));
    const { execution, parked } = await runParked(hook);
    expect(parked).toEqual([]);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(receivedFor(execution)).toHaveLength(1);
    const step = stepOf(execution);
    expect(step.state).toBe("STEP_STATE_ERROR");
    expect(step.error).toBe("notification not delivered: HTTP 404 (final, not tried again)");
    expect(attemptsOf(execution)).toEqual([expect.objectContaining({ attempt: 1, status: 404, error: "HTTP_STATUS", responseExcerpt: "no such hook" })]);
    expect(step.output).toMatchObject({ delivered: false });
  });

  it("a receiver that never answers: each attempt times out, parked between them on the schedule, and the step fails after the last with its attempt log", async () => {
    const hook = await notifying(urlOf("/slow"));
    const { execution, parked } = await runParked(hook);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(parked).toHaveLength(3);
    const attempts = attemptsOf(execution);
    expect(attempts.map((a) => [a.attempt, a.waitedMs])).toEqual([
      [1, 0],
      [2, 5_000],
      [3, 10_000],
      [4, 20_000],
    ]);
    for (const a of attempts) expect(a).toMatchObject({ status: null, error: "TIMEOUT" });
    for (const a of attempts) expect(a.durationMs).toBeLessThan(2_000);
    expect(stepOf(execution).error).toMatch(/^notification not delivered after 4 attempts; last: TIMEOUT: /);
    expect(receivedFor(execution)).toHaveLength(4);
  });

  it("requests in flight to one destination are capped per instance: the executions over the cap park without an attempt, and are sent once a slot is free", async () => {
    const hook = await notifying(urlOf("/slow"));
    const events = [];
    for (let n = 0; n < 4; n++) events.push(expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ userId: `u-${n}` }))));
    const first = await Promise.all(events.map((e) => settled(ts, e.automationExecutionId!)));
    // Two attempts made (and timed out), two parked with none.
    const made = first.map((e) => attemptsOf(e).length).sort();
    expect(made).toEqual([0, 0, 1, 1]);
    for (const e of first) expect(e.state).toBe("AUTOMATION_EXECUTION_STATE_PARKED");
    const ends = await Promise.all(events.map((e) => finished(ts, e.automationExecutionId!)));
    for (const { execution } of ends) {
      expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
      expect(attemptsOf(execution)).toHaveLength(4);
    }
  });

  it("a fund event notified as it is (bodyCel ctx.trigger) is the contract's fundEventNotification, its body the event of the execution", async () => {
    const appId = newAppId("notified");
    const { userId } = await ts.userClient(["ROLE_USER"]);
    const automationId = await fundAutomation(ts.admin, { eventTypes: ["FUND_EVENT_TYPE_LIMIT_SUSPENDED"], conditionCel: `ctx.trigger.appId == "${appId}"` }, [notifyStep(urlOf("/ok"), "ctx.trigger")]);
    unwrap(await funds(ts.admin).suspend(userId, appId, { reason: "notified" }));
    const [execution] = await settledExecutions([ts.admin], automationId, 1);
    const [received, ...others] = receivedFor(execution!);
    expect(others).toEqual([]);
    expect(webhookErrors("fundEventNotification", received!.headers, received!.body)).toEqual([]);
    expect(JSON.parse(received!.body)).toEqual({ ...eventOf(execution!), type: "FUND_EVENT_TYPE_LIMIT_SUSPENDED", userId, appId });
  });

  it("a body larger than 64 KB as JSON fails the step before anything is sent", async () => {
    const hook = await notifying(urlOf("/ok"), '{"a": ctx.trigger.big, "b": ctx.trigger.big}');
    const execution = await run(hook, { big: "y".repeat(40_000) });
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(stepOf(execution).error).toMatch(/larger than 65536 bytes/);
    expect(receivedFor(execution)).toEqual([]);
  });
});

describe("notify: the outbound-address guard", () => {
  const refusedAtSave = [
    ["http:", "http://hooks.example.com/x", "must use https"],
    ["a loopback IP", "https://127.0.0.1/x", "the notification host is an address the server does not connect to"],
    ["a private IP", "https://10.0.0.1/x", "the notification host is an address the server does not connect to"],
    ["the metadata address", "https://169.254.169.254/latest/meta-data/", "the notification host is an address the server does not connect to"],
    ["IPv6 loopback", "https://[::1]/x", "the notification host is an address the server does not connect to"],
    ["a loopback IP in hex", "https://0x7f.1/x", "the notification host is an address the server does not connect to"],
    ["credentials", "https://user:pw@hooks.example.com/x", "must not carry credentials"],
    ["not a URL", "hooks.example.com/x", "is not an absolute URL"],
  ] as const;

  it.each(refusedAtSave)("%s is refused at save (create and update) with 400 INVALID_NOTIFICATION_URL, and by the steps check", async (_name, url, description) => {
    const api = automationsApi(ts.admin);
    const created = await api.create({ displayName: "n", automationSteps: [notifyStep(url)] });
    expectError(created, 400, "INVALID_NOTIFICATION_URL");
    const error = created.error as { message: string };
    expect(error.message).toBe(`automation.automationSteps[0].notify.url: ${description}`);
    const hook = await createHooked(ts);
    expectError(await api.update(hook.id, { displayName: "x", automationSteps: [notifyStep(url)] }, "automationSteps"), 400, "INVALID_NOTIFICATION_URL");
    const report = unwrap(await api.check({ automationSteps: [notifyStep(url)] }));
    expect(report.problems).toEqual([{ path: "automationSteps[0].notify.url", reason: "INVALID_NOTIFICATION_URL", message: `automationSteps[0].notify.url: ${description}`, position: null }]);
  });

  it.each([
    ["localhost", "localhost", "resolves to an address"],
    ["a name resolving to a private address", "private.notify.test", "resolves to an address"],
    ["a name resolving to a public and a loopback address", "mixed.notify.test", "resolves to an address"],
  ])("%s is saved (a name is resolved at send) and refused at send: one attempt, ADDRESS_REFUSED, nothing reaches the internal network", async (_name, host) => {
    const before = internal.connections;
    const hook = await notifying(`https://${host}:${internal.port}/x`);
    const execution = await run(hook);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(attemptsOf(execution)).toEqual([expect.objectContaining({ attempt: 1, status: null, error: "ADDRESS_REFUSED" })]);
    expect(stepOf(execution).error).toBe("notification not delivered: ADDRESS_REFUSED: the notification host resolves to an address the server does not connect to (final, not tried again)");
    expect(internal.connections).toBe(before);
    expect(JSON.stringify(execution)).not.toContain("127.0.0.1");
  });
});

describe("notify: the signing secret", () => {
  it("RotateNotificationSecret: the next notification is signed with the new and the replaced secret; after the grace period with the new one only", async () => {
    const api = automationsApi(ts.admin);
    const hook = await notifying(urlOf("/ok"));
    const rotated = unwrap(await ts.admin.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: hook.id } }, body: {} }));
    expect(rotated.automation.id).toBe(hook.id);
    expect(rotated.notificationSecret).toMatch(/^whsec_/);
    expect(rotated.notificationSecret).not.toBe(hook.notificationSecret);
    shown.push(rotated.notificationSecret);
    const during = receivedFor(await run(hook))[0]!;
    expect(verifiedBy(rotated.notificationSecret, during)).toEqual([true, false]);
    expect(verifiedBy(hook.notificationSecret, during)).toEqual([false, true]);

    ts.clock.advance(GRACE_SECONDS * 1000 + 1000);
    const after = receivedFor(await run(hook))[0]!;
    expect(verifiedBy(rotated.notificationSecret, after)).toEqual([true]);
    expect(verifiedBy(hook.notificationSecret, after)).toEqual([false]);
    expect(unwrap(await api.get(hook.id)).automation.id).toBe(hook.id);
  });

  it("an automation without a notify step gets its first secret by a rotation; an unknown automation is 404", async () => {
    const hook = await createHooked(ts);
    const first = unwrap(await ts.admin.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: hook.id } }, body: {} }));
    expect(first.notificationSecret).toMatch(/^whsec_/);
    shown.push(first.notificationSecret);
    // A later save with a notify step keeps it (made already): null.
    const saved = unwrap(await automationsApi(ts.admin).update(hook.id, { displayName: "x", automationSteps: [notifyStep(urlOf("/ok"))] }, "automationSteps"));
    expect(saved.notificationSecret).toBeNull();
    expectError(await ts.admin.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: "aut_doesNotExist00" } }, body: {} }), 404, "AUTOMATION_NOT_FOUND");
  });

  it("a body that is not JSON is 400 MALFORMED_BODY, as documented", async () => {
    const hook = await createHooked(ts);
    const token = await bootstrapToken(ts.url);
    const answer = await fetch(`${ts.url}/api/v1/automations/${hook.id}/notification-secret`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{" });
    expect(answer.status).toBe(400);
    const body = (await answer.json()) as { message: string; details: Array<{ reason?: string }> };
    expect([body.message, body.details[0]?.reason]).toEqual(["the request body is not valid JSON", "MALFORMED_BODY"]);
  });

  it("a user who is not a super admin cannot rotate it (403)", async () => {
    const hook = await createHooked(ts);
    const fundAdmin = await ts.userClient(["ROLE_FUND_ADMIN"]);
    expectError(await fundAdmin.client.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: hook.id } }, body: {} }), 403, "ROLE_NOT_ALLOWED");
  });

  it("no secret reaches the logs, a step result or an error (after the tests above: deliveries, retries, failures, rotations)", async () => {
    expect(shown.length).toBeGreaterThan(5);
    const stored = JSON.stringify(unwrap(await automationsApi(ts.admin).executions({ page_size: 100 })));
    expect(stored).toContain("STEP_STATE_ERROR"); // failures are among them
    const text = logs.text();
    expect(text).toContain("automation"); // the log is written to
    for (const secret of shown) {
      const bare = secret.replace(/^whsec_/, "");
      expect(text).not.toContain(bare);
      expect(stored).not.toContain(bare);
    }
  });
});

describe("notify with NOTIFICATION_ALLOW_INSECURE=1 (development)", () => {
  it("http: and loopback addresses are saved and posted to", async () => {
    const received: Received[] = [];
    const plain = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString();
        received.push({ path: req.url ?? "", headers: req.headers, body });
        drift.push(...webhookErrors("notification", req.headers, body));
        res.writeHead(200).end();
      });
    });
    plain.listen(0, "127.0.0.1");
    await once(plain, "listening");
    const port = (plain.address() as net.AddressInfo).port;
    const dev = await startTestServer({ NOTIFICATION_ALLOW_INSECURE: "1", ...DELIVERY });
    try {
      const hook = await createHooked(dev);
      const saved = unwrap(await automationsApi(dev.admin).update(hook.id, { displayName: "x", automationSteps: [notifyStep(`http://127.0.0.1:${port}/dev`)] }, "automationSteps"));
      expectError(await automationsApi(dev.admin).create({ displayName: "m", automationSteps: [notifyStep("https://169.254.169.254/")] }), 400, "INVALID_NOTIFICATION_URL");
      const event = expectAccepted(await sendHmac(dev, hook.url, hook.secret, '{"userId":"u"}'));
      const execution = await settled(dev, event.automationExecutionId!);
      expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
      expect(received).toHaveLength(1);
      expect(verifiedBy(saved.notificationSecret!, received[0]!)).toEqual([true]);
    } finally {
      await dev.stop();
      await new Promise((r) => plain.close(r));
    }
  }, 120_000);
});
