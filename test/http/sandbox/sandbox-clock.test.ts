// The sandbox's clock through HTTP: a server started as the sandbox (the option scripts/sandbox.ts
// sets) answers Get and Advance, carries Sandbox-Time on every answer, and after a move holds have
// expired, extensions lapsed, windows rolled, thresholds fire again and the sweeps have run; any
// other server answers both 404 SANDBOX_ONLY, before authentication, without the header.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { bootstrapToken, startTestServer, type TestServer, type TestUser } from "../../support/server.js";
import { eventOf, fundAutomation, settledExecutions, stillExecutions } from "../automations/fund-events-helpers.js";
import { amount, DAY, expectError, funds, HOUR, iso, money, newAppId } from "../limits/helpers.js";
import { authorized, spends } from "../spends/helpers.js";
import { createHooked, expectAccepted, sendHmac } from "../webhooks/helpers.js";

const RETENTION_DAYS = 7;

let ts: TestServer;
let plain: TestServer;
let fundAdmin: TestUser;
beforeAll(async () => {
  [ts, plain] = await Promise.all([startTestServer({ EXECUTION_RETENTION_DAYS: String(RETENTION_DAYS) }, undefined, { sandbox: true }), startTestServer()]);
  fundAdmin = await ts.userClient(["ROLE_FUND_ADMIN"]);
});
afterAll(async () => Promise.all([ts?.stop(), plain?.stop()]));

const getClock = (server = ts) => server.admin.GET("/api/v1/sandbox/clock");
const advance = (duration: unknown, server = ts) => server.admin.POST("/api/v1/sandbox/clock/advance", { body: { duration } as never });
/** Moves the clock and answers its time (ms) after the move. */
async function moved(seconds: number): Promise<number> {
  return Date.parse(unwrap(await advance(`${seconds}s`)).sandboxClock.now);
}
const sandboxNow = async () => Date.parse(unwrap(await getClock()).sandboxClock.now);

describe("Get and Advance", () => {
  it("Get answers the test's clock and no offset at first; Advance moves it forward, the offset adding up, and Get agrees", async () => {
    const first = unwrap(await getClock()).sandboxClock;
    expect(first).toEqual({ now: iso(ts.clock.now()), offset: "0s" });
    const answer = await advance("90s");
    expect(unwrap(answer).sandboxClock).toEqual({ now: iso(ts.clock.now() + 90_000), offset: "90s" });
    expect(answer.response.headers.get("sandbox-time")).toBe(iso(ts.clock.now() + 90_000));
    unwrap(await advance("10s"));
    expect(unwrap(await getClock()).sandboxClock).toEqual({ now: iso(ts.clock.now() + 100_000), offset: "100s" });
    // The test's own clock still moves the base: the sandbox's time is it plus the offset.
    ts.clock.advance(1_000);
    expect(unwrap(await getClock()).sandboxClock.now).toBe(iso(ts.clock.now() + 100_000));
  });

  it.each([
    ["0s", "DURATION_NOT_POSITIVE"],
    ["34560001s", "DURATION_TOO_LONG"],
    ["-60s", "INVALID_ARGUMENT"],
    ["1h", "INVALID_ARGUMENT"],
    ["1.5s", "INVALID_ARGUMENT"],
    [3600, "INVALID_ARGUMENT"],
  ])("a duration of %j is 400 %s, and the clock does not move", async (duration, reason) => {
    const before = unwrap(await getClock()).sandboxClock;
    expectError(await advance(duration), 400, reason);
    expect(unwrap(await getClock()).sandboxClock).toEqual(before);
  });

  it("a query parameter is 400 (Get takes none); a body that is not JSON is 400 MALFORMED_BODY", async () => {
    const token = await bootstrapToken(ts.url);
    const auth = { Authorization: `Bearer ${token}` };
    const query = await fetch(`${ts.url}/api/v1/sandbox/clock?page_size=10`, { headers: auth });
    expect(await query.json()).toMatchObject({ code: 3, message: "query.page_size: Unknown query parameter 'page_size'" });
    const body = await fetch(`${ts.url}/api/v1/sandbox/clock/advance`, { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: '{"duration":' });
    const refused = (await body.json()) as { message: string; details: { reason?: string }[] };
    expect([body.status, refused.message, refused.details[0]?.reason]).toEqual([400, "the request body is not valid JSON", "MALFORMED_BODY"]);
  });

  it("the longest move (400 days) is taken", async () => {
    const before = await sandboxNow();
    expect(await moved(34_560_000)).toBe(before + 400 * DAY);
  });

  it("only a super admin may call them: 403 ROLE_NOT_ALLOWED; no token is 401", async () => {
    expectError(await fundAdmin.client.GET("/api/v1/sandbox/clock"), 403, "ROLE_NOT_ALLOWED");
    expectError(await fundAdmin.client.POST("/api/v1/sandbox/clock/advance", { body: { duration: "1s" } }), 403, "ROLE_NOT_ALLOWED");
    expectError(await ts.anonymous.GET("/api/v1/sandbox/clock"), 401, "MISSING_ACCESS_TOKEN");
  });

  it("an Advance retried with its Idempotency-Key answers the first move again and moves nothing more", async () => {
    const key = crypto.randomUUID();
    const send = () => ts.admin.POST("/api/v1/sandbox/clock/advance", { params: { header: { "Idempotency-Key": key } }, body: { duration: "60s" } });
    const first = unwrap(await send()).sandboxClock;
    const again = await send();
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    expect(unwrap(again).sandboxClock).toEqual(first);
    expect(unwrap(await getClock()).sandboxClock.offset).toBe(first.offset);
  });
});

describe("every answer of the sandbox carries its time", () => {
  it("2xx, 4xx, the token endpoint, an unknown route, /healthz: Sandbox-Time is the sandbox's time", async () => {
    const now = iso(await sandboxNow());
    const answers = [
      (await ts.admin.GET("/api/v1/funds/policy")).response,
      (await fundAdmin.client.GET("/api/v1/sandbox/clock")).response,
      await fetch(`${ts.url}/auth/v1/token`, { method: "POST", body: new URLSearchParams({ grant_type: "client_credentials", client_id: "nobody", client_secret: "wrong" }) }),
      await fetch(`${ts.url}/api/v1/nowhere`),
      await fetch(`${ts.url}/healthz`),
    ];
    expect(answers.map((r) => r.headers.get("sandbox-time"))).toEqual(answers.map(() => now));
  });
});

describe("what follows from the clock after a move", () => {
  it("a hold past its expiry is expired and no longer held", async () => {
    const { userId } = await ts.userClient(["ROLE_USER"]);
    const appId = newAppId("clock");
    unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100"), period: "PERIOD_KIND_MONTHLY" }));
    const hold = await authorized(spends(ts.admin), { userId, appId, amount: money("30"), holdSeconds: 60 });
    expect(hold.state).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
    await moved(61);
    expect(unwrap(await spends(ts.admin).get(hold.id!)).authorization.state).toBe("SPEND_AUTHORIZATION_STATE_EXPIRED");
    expect(unwrap(await funds(ts.admin).effective(userId, appId)).effective.usage!.held).toEqual(money("0"));
  });

  it("an extension past its expiry has lapsed: the limit is the row's again", async () => {
    const { userId } = await ts.userClient(["ROLE_USER"]);
    const appId = newAppId("clock");
    const f = funds(ts.admin);
    unwrap(await f.setLimit(userId, appId, { limit: amount("100"), period: "PERIOD_KIND_MONTHLY" }));
    unwrap(await f.setExtension(userId, appId, { limit: amount("500"), expiresAt: iso((await sandboxNow()) + HOUR) }));
    expect(unwrap(await f.effective(userId, appId)).effective).toMatchObject({ cause: "CAUSE_EXTENSION", limit: amount("500") });
    await moved(3601);
    expect(unwrap(await f.effective(userId, appId)).effective).toMatchObject({ cause: "CAUSE_LIMIT", limit: amount("100") });
  });

  it("past the window's end, the window has rolled: nothing spent in the new one", async () => {
    const { userId } = await ts.userClient(["ROLE_USER"]);
    const appId = newAppId("clock");
    unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100"), period: "PERIOD_KIND_DAILY" }));
    const spent = await authorized(spends(ts.admin), { userId, appId, amount: money("70"), capture: true });
    const usage = unwrap(await funds(ts.admin).effective(userId, appId)).effective.usage!;
    expect(usage.spent).toEqual(money("70"));
    await moved(Math.ceil((Date.parse(spent.windowEnd!) - (await sandboxNow())) / 1000));
    const rolled = unwrap(await funds(ts.admin).effective(userId, appId)).effective.usage!;
    expect(rolled).toMatchObject({ windowStart: usage.windowEnd, spent: money("0") });
  });

  it("a usage threshold fired in a window fires again in the next one, once the clock moved past it", async () => {
    const { userId } = await ts.userClient(["ROLE_USER"]);
    const appId = newAppId("clock");
    unwrap(await funds(ts.admin).setLimit(userId, appId, { limit: amount("100"), period: "PERIOD_KIND_DAILY" }));
    const id = await fundAutomation(ts.admin, { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [50], conditionCel: `ctx.trigger.appId == "${appId}"` });
    const first = await authorized(spends(ts.admin), { userId, appId, amount: money("60"), capture: true });
    await settledExecutions([ts.admin], id, 1);
    await authorized(spends(ts.admin), { userId, appId, amount: money("10"), capture: true });
    await stillExecutions(ts.admin, id, 1, 300);
    await moved(Math.ceil((Date.parse(first.windowEnd!) - (await sandboxNow())) / 1000));
    const second = await authorized(spends(ts.admin), { userId, appId, amount: money("60"), capture: true });
    const all = await settledExecutions([ts.admin], id, 2);
    expect(eventOf(all[1]!)).toMatchObject({ type: "FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED", authorization: second });
  });

  it("the sweep of executions past their retention has run when Advance answers (an automation's last one is kept)", async () => {
    const hook = await createHooked(ts);
    const send = async (n: number) =>
      expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ n }), { timestamp: String(Math.floor((await sandboxNow()) / 1000)) })).automationExecutionId!;
    const old = await send(1);
    await moved(1); // the newer one made later
    const last = await send(2);
    await ts.server.worker.idle();
    const execution = (id: string) => ts.admin.GET("/api/v1/automation_executions/{id}", { params: { path: { id } } });
    expect(unwrap(await execution(old)).automationExecution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    await moved(RETENTION_DAYS * 86_400 + 60);
    expectError(await execution(old), 404, "EXECUTION_NOT_FOUND");
    expect(unwrap(await execution(last)).automationExecution.id).toBe(last);
  });
});

describe("a server that is not the sandbox", () => {
  it("answers both 404 SANDBOX_ONLY, before authentication, and no answer carries Sandbox-Time", async () => {
    const get = await getClock(plain);
    expectError(get, 404, "SANDBOX_ONLY");
    expectError(await advance("60s", plain), 404, "SANDBOX_ONLY");
    expectError(await plain.anonymous.GET("/api/v1/sandbox/clock"), 404, "SANDBOX_ONLY");
    const answers = [get.response, (await plain.admin.GET("/api/v1/funds/policy")).response, await fetch(`${plain.url}/healthz`)];
    expect(answers.map((r) => r.headers.get("sandbox-time"))).toEqual([null, null, null]);
  });
});
