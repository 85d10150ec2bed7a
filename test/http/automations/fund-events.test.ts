// Fund events as automation triggers, through HTTP on one server: the trigger as saved and refused,
// each event type's payload as the execution's ctx.trigger, the condition, usage thresholds fired
// once per window, no event from a change that rolled back, and the depth that ends loops.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { eventOf, fundAutomation, settledExecutions, stillExecutions } from "./fund-events-helpers.js";
import { amount, money, newAppId, spendServerForFile, type SpendServer } from "../spends/helpers.js";

let server: SpendServer;
spendServerForFile((s) => (server = s));

/** A fresh app of the subject with a monthly limit of `units`, and a condition naming it. */
async function limitedApp(units = "100"): Promise<{ appId: string; only: string }> {
  const appId = newAppId("fund");
  unwrap(await server.admin.setLimit(server.subject.userId, appId, { limit: amount(units), period: "PERIOD_KIND_MONTHLY" }));
  return { appId, only: `ctx.trigger.appId == "${appId}"` };
}

/**
 * A second later on the server's clock: the executions of what follows are listed after those of
 * what came before (executions are ordered by when they were made, then by a random id).
 */
const tick = () => server.ts.clock.advance(1_000);

const authorize = async (appId: string, units: string, extra: object = {}) => {
  tick();
  return unwrap(await server.spend.authorize({ userId: server.subject.userId, appId, amount: money(units), ...extra })).authorization;
};

describe(`fund-event triggers on ${testDialect()}`, () => {
  it("saves the trigger as a oneof arm, thresholds in order, and answers every field", async () => {
    const { ts } = server;
    const saved = unwrap(
      await ts.admin.POST("/api/v1/automations", {
        body: { automation: { displayName: "thresholds", triggers: [{ fundEvents: { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [100, 80] } }] } },
      }),
    );
    expect(saved.automation.triggers).toEqual([{ webhook: null, fundEvents: { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [80, 100], conditionCel: "" } }]);
    expect(saved.webhookSecret).toBeNull();
    const got = unwrap(await ts.admin.GET("/api/v1/automations/{id}", { params: { path: { id: saved.automation.id! } } }));
    expect(got.automation.triggers).toEqual(saved.automation.triggers);
  });

  it.each([
    ["a condition that does not compile", { eventTypes: ["FUND_EVENT_TYPE_SPEND_DECLINED"], conditionCel: "ctx.trigger.appId ==" }, "CEL_INVALID"],
    ["a condition that is not a bool", { eventTypes: ["FUND_EVENT_TYPE_SPEND_DECLINED"], conditionCel: '"yes"' }, "CEL_INVALID"],
    ["a threshold event without thresholds", { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"] }, "INVALID_ARGUMENT"],
    ["thresholds without the threshold event", { eventTypes: ["FUND_EVENT_TYPE_SPEND_DECLINED"], usageThresholdPercents: [50] }, "INVALID_ARGUMENT"],
    ["the unspecified type", { eventTypes: ["FUND_EVENT_TYPE_UNSPECIFIED"] }, "INVALID_ARGUMENT"],
    ["a threshold over 100", { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [101] }, "INVALID_ARGUMENT"],
    ["no event type", { eventTypes: [] }, "INVALID_ARGUMENT"],
  ])("refuses %s at save with 400", async (_name, fundEvents, reason) => {
    const r = await server.ts.admin.POST("/api/v1/automations", { body: { automation: { displayName: "bad", triggers: [{ fundEvents: fundEvents as never }] } } });
    expect(r.response.status).toBe(400);
    expect((r.error as { details?: Array<{ reason?: string }> }).details?.[0]?.reason).toBe(reason);
  });

  it("a spend authorized and one declined start an execution each, with the decision's cause and trace", async () => {
    const { appId, only } = await limitedApp("10");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED", "FUND_EVENT_TYPE_SPEND_DECLINED"], conditionCel: only });
    const approved = await authorize(appId, "6");
    const declined = await authorize(appId, "6");
    expect(declined.decision.approved).toBe(false);
    const [first, second] = await settledExecutions([server.ts.admin], id, 2);
    expect(eventOf(first!)).toMatchObject({ type: "FUND_EVENT_TYPE_SPEND_AUTHORIZED", userId: server.subject.userId, appId, depth: 0, causedBy: null, authorization: approved, amount: null, usageThreshold: null, limitChange: null });
    expect(eventOf(second!)).toMatchObject({ type: "FUND_EVENT_TYPE_SPEND_DECLINED", authorization: declined });
    expect(eventOf(second!).authorization!.decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED" });
    expect(eventOf(second!).authorization!.decision.trace.length).toBeGreaterThan(1);
    expect(first!.eventId).toBe(eventOf(first!).id);
    expect(first!.eventId).toMatch(/^fev_[0-9A-Za-z]{16}$/);
    expect(first!.stepResults[0]).toMatchObject({ state: "STEP_STATE_DONE", output: { type: "FUND_EVENT_TYPE_SPEND_AUTHORIZED" } });
  });

  it("the condition filters: an event for which it is false starts nothing", async () => {
    const { appId } = await limitedApp("10");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED"], conditionCel: `ctx.trigger.authorization.amount.units == "2" && ctx.trigger.appId == "${appId}"` });
    await authorize(appId, "1");
    await authorize(appId, "2");
    const [only] = await settledExecutions([server.ts.admin], id, 1);
    expect(eventOf(only!).authorization!.amount).toEqual(money("2"));
    await stillExecutions(server.ts.admin, id, 1, 300);
  });

  it("a capture, a release and a reversal each start one, with the amount they moved; a release of a released hold none", async () => {
    const { appId, only } = await limitedApp("100");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_SPEND_CAPTURED", "FUND_EVENT_TYPE_SPEND_RELEASED", "FUND_EVENT_TYPE_SPEND_REVERSED"], conditionCel: only });
    const a = await authorize(appId, "10");
    tick();
    const captured = unwrap(await server.spend.capture(a.id, { amount: money("7") })).authorization;
    tick();
    const reversed = unwrap(await server.spend.reverse(a.id, { amount: money("2") })).authorization;
    const b = await authorize(appId, "5");
    tick();
    const released = unwrap(await server.spend.release(b.id)).authorization;
    unwrap(await server.spend.release(b.id));
    const events = (await settledExecutions([server.ts.admin], id, 3)).map(eventOf);
    expect(events.map((e) => [e.type, e.amount])).toEqual([
      ["FUND_EVENT_TYPE_SPEND_CAPTURED", money("7")],
      ["FUND_EVENT_TYPE_SPEND_REVERSED", money("2")],
      ["FUND_EVENT_TYPE_SPEND_RELEASED", money("5")],
    ]);
    expect(events.map((e) => e.authorization)).toEqual([captured, reversed, released]);
    await stillExecutions(server.ts.admin, id, 3, 300);
  });

  it("a usage threshold fires once per window: crossed, then released below and crossed again, it does not fire twice", async () => {
    const { appId, only } = await limitedApp("100");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [50, 80], conditionCel: only });
    await authorize(appId, "40");
    const crossing = await authorize(appId, "15"); // 55: 50 %
    const [at50] = await settledExecutions([server.ts.admin], id, 1);
    expect(eventOf(at50!)).toMatchObject({ type: "FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED", authorization: crossing, usageThreshold: { percent: 50, usage: crossing.decision.usage } });
    unwrap(await server.spend.release(crossing.id)); // 40
    await authorize(appId, "20"); // 60 again: 50 % fired already
    await authorize(appId, "25", { capture: true }); // 85: 80 %
    const all = await settledExecutions([server.ts.admin], id, 2);
    expect(eventOf(all[1]!).usageThreshold!.percent).toBe(80);
    await authorize(appId, "15"); // 100
    await stillExecutions(server.ts.admin, id, 2, 300);
  });

  it("one decision crossing two thresholds fires both; a declined spend crosses nothing", async () => {
    const { appId, only } = await limitedApp("100");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [25, 50, 100], conditionCel: only });
    expect((await authorize(appId, "101")).decision.approved).toBe(false);
    await authorize(appId, "60");
    const events = (await settledExecutions([server.ts.admin], id, 2)).map(eventOf);
    expect(events.map((e) => e.usageThreshold!.percent).sort()).toEqual([25, 50]);
  });

  it("a row suspended, unsuspended and its limit changed start one each, with the controls before and the row after", async () => {
    const { appId, only } = await limitedApp("100");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_LIMIT_SUSPENDED", "FUND_EVENT_TYPE_LIMIT_UNSUSPENDED", "FUND_EVENT_TYPE_LIMIT_CHANGED"], conditionCel: only });
    const { userId } = server.subject;
    const suspended = unwrap(await server.admin.suspend(userId, appId, { reason: "audit" })).limit!;
    unwrap(await server.admin.suspend(userId, appId, { reason: "audit again" })); // still suspended: no event
    tick();
    const unsuspended = unwrap(await server.admin.unsuspend(userId, appId)).limit!;
    tick();
    const changed = unwrap(await server.admin.setLimit(userId, appId, { limit: amount("50") })).limit;
    const events = (await settledExecutions([server.ts.admin], id, 3)).map(eventOf);
    expect(events.map((e) => e.type)).toEqual(["FUND_EVENT_TYPE_LIMIT_SUSPENDED", "FUND_EVENT_TYPE_LIMIT_UNSUSPENDED", "FUND_EVENT_TYPE_LIMIT_CHANGED"]);
    expect(events[0]!.limitChange).toEqual({ before: expect.objectContaining({ suspension: null }), after: suspended });
    expect(events[1]!.limitChange!.after).toEqual(unsuspended);
    expect(events[2]!.limitChange!.after).toEqual(changed);
    expect(events[2]!.limitChange!.before!.limit).toEqual(amount("100"));
    await stillExecutions(server.ts.admin, id, 3, 300);
  });

  it("the subject's own SetLimit and the row's deletion change its limit too; the deleted row is answered with deletedAt", async () => {
    const { appId, only } = await limitedApp("100");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_LIMIT_CHANGED"], conditionCel: only });
    tick();
    const mine = unwrap(await server.subject.f.mySetLimit(appId, { limit: amount("20") })).limit;
    tick();
    unwrap(await server.admin.delete(server.subject.userId, appId));
    const events = (await settledExecutions([server.ts.admin], id, 2)).map(eventOf);
    expect(events[0]!.limitChange!.after.controls!.limit).toEqual(mine.controls!.limit);
    expect(events[1]!.limitChange!.before!.limit).toEqual(amount("20"));
    expect(events[1]!.limitChange!.after.deletedAt).not.toBeNull();
  });

  it("a draft or disabled automation starts nothing; published, the next event starts it", async () => {
    const { appId, only } = await limitedApp("100");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED"], conditionCel: only });
    unwrap(await server.ts.admin.POST("/api/v1/automations/{id}", { params: { path: { id } }, body: { automation: { displayName: "x", enabled: false }, updateMask: "enabled" } }));
    await authorize(appId, "1");
    await stillExecutions(server.ts.admin, id, 0, 300);
    unwrap(await server.ts.admin.POST("/api/v1/automations/{id}", { params: { path: { id } }, body: { automation: { displayName: "x", enabled: true }, updateMask: "enabled" } }));
    await authorize(appId, "1");
    await settledExecutions([server.ts.admin], id, 1);
  });

  it("Authorize with one Idempotency-Key sent 20 times at once: the decisions that lost the key rolled back, and so did their events", async () => {
    const { appId, only } = await limitedApp("100");
    const id = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED"], conditionCel: only });
    const key = `same-${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 20 }, () => server.spend.authorize({ userId: server.subject.userId, appId, amount: money("1") }, key)));
    const ids = new Set(answers.map((a) => unwrap(a).authorization.id));
    expect(ids.size).toBe(1);
    const [only1] = await settledExecutions([server.ts.admin], id, 1);
    expect(eventOf(only1!).authorization!.id).toBe([...ids][0]);
    await stillExecutions(server.ts.admin, id, 1, 300);
  });

  it("an automation whose steps cause the events it runs on stops at depth 3: four executions, each one deeper and caused by the one before", async () => {
    const { appId } = await limitedApp("100");
    const { userId } = server.subject;
    // Suspended: unsuspend; unsuspended: suspend again. Each step's change is the next event.
    const id = await fundAutomation(
      server.ts.admin,
      { eventTypes: ["FUND_EVENT_TYPE_LIMIT_SUSPENDED", "FUND_EVENT_TYPE_LIMIT_UNSUSPENDED"], conditionCel: `ctx.trigger.appId == "${appId}"` },
      [
        { stepName: "lift", skipIfTrueCel: 'ctx.trigger.type != "FUND_EVENT_TYPE_LIMIT_SUSPENDED"', unsuspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId" } },
        { stepName: "freeze", skipIfTrueCel: 'ctx.trigger.type != "FUND_EVENT_TYPE_LIMIT_UNSUSPENDED"', suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId", reasonCel: '"loop"' } },
      ],
    );
    unwrap(await server.admin.suspend(userId, appId, { reason: "start" }));
    // Made within the same instant of the test's clock: ordered by depth.
    const runs = (await settledExecutions([server.ts.admin], id, 4)).sort((a, b) => eventOf(a).depth - eventOf(b).depth);
    expect(runs.map((e) => eventOf(e).depth)).toEqual([0, 1, 2, 3]);
    expect(runs.map((e) => eventOf(e).type)).toEqual(["FUND_EVENT_TYPE_LIMIT_SUSPENDED", "FUND_EVENT_TYPE_LIMIT_UNSUSPENDED", "FUND_EVENT_TYPE_LIMIT_SUSPENDED", "FUND_EVENT_TYPE_LIMIT_UNSUSPENDED"]);
    runs.slice(1).forEach((e, i) => expect(eventOf(e).causedBy).toEqual({ automationId: id, executionId: runs[i]!.id }));
    expect(runs.every((e) => e.state === "AUTOMATION_EXECUTION_STATE_DONE")).toBe(true);
    // The last run's step suspended the row (an event of depth 4), which started nothing.
    expect(unwrap(await server.admin.get(userId, appId)).limit.controls!.suspension).toMatchObject({ reason: "loop" });
    await stillExecutions(server.ts.admin, id, 4, 1_000);
  });

  it("a redrive of a fund event's failed execution keeps its depth: the changes the rerun makes are one deeper", async () => {
    const { appId, only } = await limitedApp("100");
    const { userId } = server.subject;
    const unsuspend = { stepName: "lift", unsuspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId" } };
    const lifter = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_LIMIT_SUSPENDED"], conditionCel: only }, [unsuspend]);
    // Runs on the lifter's unsuspension (depth 1) and fails; fixed, its redrive suspends the row again.
    const follower = await fundAutomation(server.ts.admin, { eventTypes: ["FUND_EVENT_TYPE_LIMIT_UNSUSPENDED"], conditionCel: only }, [
      { stepName: "read", evaluateExpressions: { expressions: [{ name: "v", expression: "ctx.trigger.missing.deeper" }] } },
    ]);
    unwrap(await server.admin.suspend(userId, appId, { reason: "start" }));
    const [failed] = await settledExecutions([server.ts.admin], follower, 1);
    expect(failed!.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(eventOf(failed!).depth).toBe(1);
    const suspend = { stepName: "freeze", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId", reasonCel: '"redriven"' } };
    unwrap(await server.ts.admin.POST("/api/v1/automations/{id}", { params: { path: { id: follower } }, body: { automation: { displayName: "follower, fixed", automationSteps: [suspend] }, updateMask: "automationSteps" } as never }));
    tick();
    const rerun = unwrap(await server.ts.admin.POST("/api/v1/automation_executions/{id}/redrive", { params: { path: { id: failed!.id! } }, body: {} })).automationExecution;
    // The rerun's suspension is an event of depth 2 (not 1, as a rerun of depth 0 would make it), which the lifter runs on.
    const lifts = await settledExecutions([server.ts.admin], lifter, 2);
    expect(eventOf(lifts[1]!)).toMatchObject({ depth: 2, causedBy: { automationId: follower, executionId: rerun.id } });
  });
});
