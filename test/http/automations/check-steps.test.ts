// CheckAutomationSteps: the save's checks, every problem reported (not only the first), the same
// problem a save answers, and the values of the expressions with a sample payload, evaluated as a
// run evaluates them but without effect.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { expectError } from "../limits/helpers.js";
import { errorInfo, evaluateStep, startAutomationsServer, type AutomationsApi, type Step } from "../webhooks/helpers.js";

let ts: TestServer;
let api: AutomationsApi;

beforeAll(async () => void ({ ts, api } = await startAutomationsServer()));
afterAll(async () => ts?.stop());

const suspendStep = (stepName: string, fields: { userIdCel?: string; appIdCel?: string; reasonCel?: string }, skipIfTrueCel?: string): Step => ({
  stepName,
  ...(skipIfTrueCel ? { skipIfTrueCel } : {}),
  suspendAppLimit: { userIdCel: fields.userIdCel ?? "ctx.trigger.userId", appIdCel: fields.appIdCel ?? "ctx.trigger.appId", ...(fields.reasonCel ? { reasonCel: fields.reasonCel } : {}) },
});

const check = async (body: unknown) => unwrap(await api.check(body));

describe("CheckAutomationSteps", () => {
  it("reports every problem with the path, reason and position a save answers, and changes nothing", async () => {
    const steps: Step[] = [
      evaluateStep("parse", { isLost: 'ctx.trigger.event == "card.lost"', bad: "1 +" }),
      suspendStep("act", { reasonCel: "size(ctx.trigger.event)" }, "ctx.steps.later.x"),
      evaluateStep("parse", { ok: "true" }),
    ];
    const report = await check({ automationSteps: steps });
    expect(report.valid).toBe(false);
    expect(report.problems.map((p) => [p.path, p.reason])).toEqual([
      ["automationSteps[0].evaluateExpressions.expressions[1].expression", "CEL_INVALID"],
      ["automationSteps[1].skipIfTrueCel", "CEL_INVALID"],
      ["automationSteps[1].suspendAppLimit.reasonCel", "CEL_INVALID"],
      ["automationSteps[2].stepName", "DUPLICATE_STEP_NAME"],
    ]);
    expect(report.problems[1]).toMatchObject({ position: 10 });
    expect(report.problems[3]!.position).toBeNull();
    expect(report.evaluations).toEqual([]);

    // The save refuses the first of them, with the same reason and position.
    const saved = await api.create({ displayName: "checked", automationSteps: steps });
    expectError(saved, 400, "CEL_INVALID");
    expect(errorInfo(saved.error).metadata).toMatchObject({ path: "automation.automationSteps[0].evaluateExpressions.expressions[1].expression", position: String(report.problems[0]!.position) });
    expect(unwrap(await api.list()).list).toEqual([]);
  });

  it("is valid exactly when a save passes", async () => {
    const steps = [evaluateStep("parse", { isLost: 'ctx.trigger.event == "card.lost"' }), suspendStep("act", {}, "!ctx.steps.parse.isLost")];
    expect(await check({ automationSteps: steps })).toEqual({ valid: true, problems: [], evaluations: [] });
    expect((await api.create({ displayName: "valid", automationSteps: steps })).response.status).toBe(200);
  });

  it("refuses a blocked extension limit and a foreign currency as a save does", async () => {
    const extension = (limit: unknown): Step =>
      ({ stepName: "extend", setAppLimitExtension: { userIdCel: "ctx.trigger.userId", appIdCel: '"app-x"', limit, expiresAtCel: "ctx.trigger.until" } }) as Step;
    const blocked = await check({ automationSteps: [extension({ blocked: {} })] });
    expect(blocked.problems).toEqual([expect.objectContaining({ path: "automationSteps[0].setAppLimitExtension.limit.blocked", reason: "LIMIT_ARM_NOT_ALLOWED", position: null })]);
    const foreign = await check({ automationSteps: [extension({ amount: { money: { currencyCode: "EUR", units: "5", nanos: 0 } } })] });
    expect(foreign.problems.map((p) => p.reason)).toEqual(["CURRENCY_MISMATCH"]);
  });

  it("evaluates against a sample payload in step order: outputs flow to later steps, limit steps change nothing", async () => {
    const user = await ts.userClient(["ROLE_USER"]);
    const steps = [
      evaluateStep("parse", { isLost: 'ctx.trigger.event == "card.lost"', app: '"app-" + ctx.trigger.app' }),
      suspendStep("act", { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.steps.parse.app", reasonCel: '"lost: " + ctx.trigger.missing' }, "!ctx.steps.parse.isLost"),
      evaluateStep("after", { acted: "has(ctx.steps.act)", next: "ctx.steps.act.limit" }),
    ];
    const report = await check({ automationSteps: steps, samplePayload: { event: "card.lost", app: "github", userId: user.userId } });
    expect(report.valid).toBe(true);
    const byPath = Object.fromEntries(report.evaluations.map((e) => [e.path, e]));
    expect(byPath["automationSteps[0].evaluateExpressions.expressions[0].expression"]).toEqual({ path: expect.any(String), value: true, error: null });
    expect(byPath["automationSteps[1].skipIfTrueCel"]!.value).toBe(false);
    expect(byPath["automationSteps[1].suspendAppLimit.appIdCel"]!.value).toBe("app-github");
    expect(byPath["automationSteps[1].suspendAppLimit.reasonCel"]).toMatchObject({ value: null, error: expect.stringContaining("missing") });
    expect(byPath["automationSteps[2].evaluateExpressions.expressions[0].expression"]!.value).toBe(false);
    expect(byPath["automationSteps[2].evaluateExpressions.expressions[1].expression"]!.error).toEqual(expect.any(String));
    // Nothing was suspended.
    const row = await ts.admin.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}", { params: { path: { user_id: user.userId, app_id: "app-github" } } });
    expect(row.response.status).toBe(404);
  });

  it("evaluates ctx.webhook as the sample delivery gives it, null without one", async () => {
    const steps = [evaluateStep("seen", { type: "ctx.webhook.eventType", isNull: "ctx.webhook == null" })];
    const values = async (body: Record<string, unknown>) => (await check({ automationSteps: steps, samplePayload: {}, ...body })).evaluations.map((e) => e.value);
    expect(await values({ sampleWebhook: { eventId: "72d3162e-cc78-11e3-81ab-4c9367dc0958", eventType: "push" } })).toEqual(["push", false]);
    expect((await check({ automationSteps: steps, samplePayload: {} })).evaluations.map((e) => [e.value, e.error === null])).toEqual([
      [null, false],
      [true, true],
    ]);
  });

  it("checks computed ids and result types as a run does, and reports a null payload's failures", async () => {
    const report = await check({
      automationSteps: [suspendStep("act", { userIdCel: '"not an id"', appIdCel: "ctx.trigger.appId" }, "ctx.trigger.flag")],
      samplePayload: null,
    });
    const errors = Object.fromEntries(report.evaluations.map((e) => [e.path, e.error]));
    expect(errors["automationSteps[0].suspendAppLimit.userIdCel"]).toContain("must evaluate to an id");
    expect(errors["automationSteps[0].suspendAppLimit.appIdCel"]).toEqual(expect.any(String));
    expect(errors["automationSteps[0].skipIfTrueCel"]).toEqual(expect.any(String));
  });

  it("refuses a sample payload over 64 KB and steps that break the schema (400)", async () => {
    expectError(await api.check({ automationSteps: [], samplePayload: { big: "x".repeat(65_536) } }), 400);
    expectError(await api.check({ automationSteps: [{ stepName: "1bad", evaluateExpressions: { expressions: [{ name: "a", expression: "1" }] } }] }), 400);
    expectError(await api.check({}), 400);
  });
});
