// The text rule through HTTP. Text fields refuse control characters other than tab and newline,
// with the 400 naming the field and nothing stored: a reason sent to the API or an app cap, one an
// automation step computes from a signed webhook, and every other text field of a request body.
// Free-form data (a webhook body, a sample payload) keeps what JSON allows. Text stored before the
// rule (written here straight into the database under the running server) is answered within the
// contract: a decision's trace quotes a reason escaped first, then clipped; a trace line an earlier
// release stored too long is answered clipped.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { withDatabase } from "../../support/old-database.js";
import { amount, expectError, HOUR, iso, money, newAppId, type Answer, type Funds } from "../limits/helpers.js";
import type { Spends } from "../spends/helpers.js";
import { startTextServer } from "./text-helpers.js";
import type { TestServer } from "../../support/server.js";
import { createHooked, expectAccepted, sendHmac, settled, type AutomationsApi, type Execution, type Hooked } from "../webhooks/helpers.js";

const CONTROLS = "\u0001".repeat(100);
const REFUSED = /^must not contain control characters \(U\+0000 to U\+001F, U\+007F to U\+009F\) other than tab and newline, or unpaired surrogates$/;
const MAX_TRACE_LINE = 500;

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let api: AutomationsApi;
let subject: { userId: string; f: Funds };

beforeAll(async () => {
  ({ ts, admin, spend, api, subject } = await startTextServer());
});
afterAll(async () => ts?.stop());

/** A 400 INVALID_ARGUMENT naming `field`, refused by the text rule. */
function expectRefused(answer: Answer, field: string): void {
  expectError(answer, 400, "INVALID_ARGUMENT");
  const body = answer.error as { message: string; details: { "@type": string; fieldViolations?: { field: string; description: string }[] }[] };
  const [named, problem] = body.message.split(/: (.*)/s) as [string, string];
  expect(named).toBe(field);
  expect(problem).toMatch(REFUSED);
  const violations = body.details.find((d) => d["@type"].endsWith("BadRequest"))?.fieldViolations;
  expect(violations?.[0]?.field).toBe(field);
}

const length = (s: string) => [...s].length;

async function authorize(appId: string) {
  return unwrap(await spend.authorize({ userId: subject.userId, appId, amount: money("1") })).authorization;
}

describe("text fields refuse control characters other than tab and newline", () => {
  it("a reason of 100 × U+0001 is 400 naming the field, through Suspend, SetExtension, an app cap and the default controls; nothing is stored and spends are decided", async () => {
    const app = newAppId("text");
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("10") }));
    const before = unwrap(await admin.get(subject.userId, app)).limit;

    expectRefused(await admin.suspend(subject.userId, app, { reason: CONTROLS }), "body.reason");
    const extension = { limit: amount("20"), expiresAt: iso(ts.clock.now() + HOUR), reason: CONTROLS };
    expectRefused(await admin.setExtension(subject.userId, app, extension), "body.reason");
    expect(unwrap(await admin.get(subject.userId, app)).limit).toEqual(before);

    const capped = newAppId("text-cap");
    expectRefused(await admin.capSet(capped, { controls: { suspension: { reason: CONTROLS } } }), "body.controls.suspension.reason");
    expectRefused(await admin.capSet(capped, { controls: { limit: amount("10"), extension } }), "body.controls.extension.reason");
    expectError(await admin.capGet(capped), 404);

    const policy = unwrap(await admin.policyGet()).fundPolicy;
    expectRefused(await admin.policyUpdate({ fundPolicy: { defaultControls: { suspension: { reason: CONTROLS } } }, updateMask: "defaultControls" }), "body.fundPolicy.defaultControls.suspension.reason");
    expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(policy);

    // Where the reason would have been stored, the spend is decided (it was 500, and stored).
    expect(await authorize(app)).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_PENDING", decision: { approved: true } });
    expect((await authorize(capped)).decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_NO_LIMIT" });
  });

  it("every control character but tab and newline is refused, C0, DEL and C1; tab, newline and other characters are stored as sent", async () => {
    for (const c of ["\u0000", "\u0001", "\u0008", "\u000b", "\u000c", "\r", "\u001b", "\u001f", "\u007f", "\u0080", "\u0085", "\u009f"]) {
      expectRefused(await admin.suspend(subject.userId, newAppId("text"), { reason: `a${c}b` }), "body.reason");
    }
    for (const reason of ["tab\there", "line\nbreak", "\u00a0\u2028\u200b\u202e\ufeff", "😀 \\ \" '"]) {
      const app = newAppId("text");
      expect(unwrap(await admin.suspend(subject.userId, app, { reason })).limit?.controls?.suspension?.reason).toBe(reason);
    }
  });

  it("every text field of a request body obeys it, the field named; nothing is stored", async () => {
    const email = `text-${Date.now()}@example.com`;
    expectRefused(await ts.admin.POST("/api/v1/users", { body: { displayName: "Ada\rLovelace", email, roles: ["ROLE_USER"] } }), "body.displayName");
    expect(unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100 } } })).list.map((u) => u.user.email)).not.toContain(email);

    expectRefused(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: subject.userId } }, body: { displayName: "sync\u0085" } }), "body.displayName");
    expect(unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: subject.userId } } })).list).toHaveLength(1);

    const automation = { displayName: "Text", automationSteps: [] };
    expectRefused(await api.create({ ...automation, description: "escape \u001b[31m red" }), "body.automation.description");
    expectRefused(await api.create({ ...automation, displayName: "bell\u0007" }), "body.automation.displayName");
    const step = { stepName: "s", evaluateExpressions: { expressions: [{ name: "x", expression: '"\u0001" == ""' }] } };
    expectRefused(await api.create({ ...automation, automationSteps: [step] }), "body.automation.automationSteps[0].evaluateExpressions.expressions[0].expression");
    const names = async () => unwrap(await api.list({ page_size: 100 })).list.map((a) => a.automation.displayName);
    expect(await names()).not.toContain("bell\u0007");

    const app = newAppId("text");
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("10") }));
    expectRefused(await spend.authorize({ userId: subject.userId, appId: app, amount: money("1"), metadata: { orderId: "ord\u0001" } }), "body.metadata.orderId");
    expect(unwrap(await spend.list({ app_id: app })).list).toEqual([]);

    // Tab and newline are text: a description of several lines is stored as sent.
    const description = "Line one\n\tindented line two";
    const saved = unwrap(await api.create({ ...automation, description })).automation;
    expect(unwrap(await api.get(saved.id!)).automation.description).toBe(description);
  });
});

describe("free-form data keeps what JSON allows", () => {
  it("a webhook body keeps control characters and NUL; a sample payload keeps control characters, and refuses only NUL", async () => {
    const hook = await createHooked(ts, { steps: [{ stepName: "echo", evaluateExpressions: { expressions: [{ name: "x", expression: "ctx.trigger.x" }] } }] });
    const payload = { x: "a\u0001b\u0000c\r\u0085" };
    const execution = await run(hook, payload);
    expect(execution.context.trigger).toEqual(payload);
    expect(execution.stepResults[0]).toMatchObject({ state: "STEP_STATE_DONE", output: { x: payload.x } });

    const steps = [{ stepName: "echo", evaluateExpressions: { expressions: [{ name: "x", expression: "ctx.trigger.x" }] } }];
    const checked = unwrap(await api.check({ automationSteps: steps, samplePayload: { x: "a\u0001b\r" } }));
    expect(checked.evaluations).toEqual([{ path: "automationSteps[0].evaluateExpressions.expressions[0].expression", value: "a\u0001b\r", error: null }]);
    const nul = await api.check({ automationSteps: steps, samplePayload: { x: "a\u0000b" } });
    expectError(nul, 400, "INVALID_ARGUMENT");
    expect((nul.error as { message: string }).message).toBe("body.samplePayload.x: must not contain NUL characters or unpaired surrogates");
  });
});

/** Delivers `payload` to the hook and answers its execution once the worker is idle. */
async function run(hook: Hooked, payload: unknown): Promise<Execution> {
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify(payload)));
  return settled(ts, event.automationExecutionId!);
}

describe("a reason an automation step computes obeys the same rule", () => {
  it("a signed webhook whose step would suspend a row with 100 × U+0001 fails the step, which changes nothing; spends are decided", async () => {
    const app = newAppId("text-step");
    unwrap(await admin.setLimit(subject.userId, app, { limit: amount("10") }));
    const before = unwrap(await admin.get(subject.userId, app)).limit;
    const target = { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId", reasonCel: "ctx.trigger.reason" };
    const suspend = await createHooked(ts, { steps: [{ stepName: "suspend", suspendAppLimit: target }] });
    const extend = await createHooked(ts, {
      steps: [{ stepName: "extend", setAppLimitExtension: { ...target, limit: amount("50"), expiresAtCel: "timestamp(ctx.trigger.until)" } }],
    });
    const payload = { userId: subject.userId, appId: app, reason: CONTROLS, until: iso(ts.clock.now() + HOUR) };
    for (const [hook, field] of [[suspend, "suspendAppLimit.reasonCel"], [extend, "setAppLimitExtension.reasonCel"]] as const) {
      const execution = await run(hook, payload);
      expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
      const [result] = execution.stepResults;
      expect(result).toMatchObject({ state: "STEP_STATE_ERROR", output: null });
      const [named, problem] = result!.error!.split(/: (.*)/s) as [string, string];
      expect([named, problem]).toEqual([field, expect.stringMatching(REFUSED)]);
    }
    expect(unwrap(await admin.get(subject.userId, app)).limit).toEqual(before);
    expect(await authorize(app)).toMatchObject({ decision: { approved: true } });

    // The editor's check reports it the same way, against the sample payload.
    const checked = unwrap(await api.check({ automationSteps: [{ stepName: "suspend", suspendAppLimit: target }], samplePayload: payload }));
    expect(checked.evaluations.find((e) => e.path.endsWith("reasonCel"))).toEqual({
      path: "automationSteps[0].suspendAppLimit.reasonCel",
      value: null,
      error: expect.stringMatching(/^automationSteps\[0\]\.suspendAppLimit\.reasonCel: must not contain control characters/),
    });
  });
});

describe("text stored before the rule is answered within the contract", () => {
  /** Rewrites the JSON of `column` of the rows `where` selects, as an earlier release may have stored it. */
  const rewrite = (table: string, column: string, where: Record<string, string>, change: (value: any) => unknown) =>
    withDatabase(ts.databaseUrl, async (db) => {
      let select = db.selectFrom(table).select(column);
      for (const [k, v] of Object.entries(where)) select = select.where(k, "=", v);
      const [row] = await select.execute();
      expect(row).toBeDefined();
      let update = db.updateTable(table).set({ [column]: JSON.stringify(change(JSON.parse(row![column]))) });
      for (const [k, v] of Object.entries(where)) update = update.where(k, "=", v);
      await update.execute();
    });

  it("a suspension reason of control characters on a subject row and on an app cap: Authorize, Get, List and GetEffective answer 200, every trace line within 500 characters", async () => {
    const oldReason = "\u0001".repeat(500);
    const row = newAppId("text-old");
    unwrap(await admin.setLimit(subject.userId, row, { limit: amount("10") }));
    unwrap(await admin.suspend(subject.userId, row, { reason: "placeholder" }));
    await rewrite("subject_app_limits", "controls", { user_id: subject.userId, app_id: row }, (c) => ({ ...c, suspension: { ...c.suspension, reason: oldReason } }));
    const capped = newAppId("text-old-cap");
    unwrap(await admin.capSet(capped, { controls: { limit: amount("10"), suspension: { reason: "placeholder" } } }));
    const capReason = `${"\u0085".repeat(10)}"\\${"\u0001".repeat(90)}`;
    await rewrite("app_caps", "controls", { app_id: capped }, (c) => ({ ...c, suspension: { ...c.suspension, reason: capReason } }));

    // Escaped first, then clipped at a whole escape, in characters, to 200 with `…` (U+0085 is not escaped).
    const rowLine = `SCOPE_SUBJECT_APP: suspended ("${"\\u0001".repeat(32)}…") -> deny`;
    const capLine = `SCOPE_APP_CAP: suspended ("${"\u0085".repeat(10)}\\"\\\\${"\\u0001".repeat(30)}…") -> deny`;
    const declined = [await authorize(row), await authorize(capped)];
    expect(declined.map((a) => a.decision.trace)).toEqual([[rowLine], ["SCOPE_SUBJECT_APP: no row -> no opinion", capLine]]);
    for (const a of declined) {
      expect(a.decision.cause).toBe("SPEND_DECLINE_CAUSE_SUSPENDED");
      expect(unwrap(await spend.get(a.id)).authorization).toEqual(a);
    }
    expect(unwrap(await spend.list({ user_id: subject.userId, page_size: 100 })).list.map((i) => i.authorization.id)).toEqual(expect.arrayContaining(declined.map((a) => a.id)));

    expect(unwrap(await admin.effective(subject.userId, row)).effective.trace).toEqual([rowLine]);
    expect(unwrap(await subject.f.myEffective(row)).effective.trace).toEqual([rowLine]);
    expect(unwrap(await admin.effective(subject.userId, capped)).effective.trace).toEqual(["SCOPE_SUBJECT_APP: no row -> no opinion", capLine]);
    for (const line of [rowLine, capLine]) expect(length(line)).toBeLessThanOrEqual(MAX_TRACE_LINE);

    // The reasons themselves are answered as stored.
    expect(unwrap(await admin.get(subject.userId, row)).limit.controls?.suspension?.reason).toBe(oldReason);
    expect(unwrap(await subject.f.myGet(row)).limit.controls?.suspension?.reason).toBe(oldReason);
    expect(unwrap(await subject.f.myList({ page_size: 100 })).list.map((i) => i.limit.appId)).toContain(row);
    expect(unwrap(await admin.search({ userIds: [subject.userId], suspended: true, pageSize: 100 })).list.map((i) => i.limit.appId)).toContain(row);
    const cap = unwrap(await admin.capGet(capped)).appCap;
    expect(cap.controls?.suspension?.reason).toBe(capReason);
    expect(unwrap(await admin.capList({ page_size: 100 })).list.map((i) => i.appCap.appId)).toContain(capped);

    // Sent back as read, the old reason is refused; the cap stays as it was. Deleted, the decisions stay readable.
    expectRefused(await admin.capSet(capped, { controls: cap.controls }), "body.controls.suspension.reason");
    unwrap(await admin.capDelete(capped));
    expect(unwrap(await spend.get(declined[1]!.id)).authorization.decision.trace).toEqual(["SCOPE_SUBJECT_APP: no row -> no opinion", capLine]);
    expect(unwrap(await spend.list({ app_id: capped })).list).toHaveLength(1);
  });

  it("an authorization an earlier release stored with a trace line past 500 characters, and metadata and names of control characters, are answered 200, the line clipped", async () => {
    const app = newAppId("text-old-trace");
    unwrap(await admin.suspend(subject.userId, app, { reason: "placeholder" }));
    const stored = await authorize(app);
    // As the release that clipped a reason to 200 characters before escaping it wrote the line.
    const longLine = `SCOPE_SUBJECT_APP: suspended (${JSON.stringify(`${"\u0001".repeat(200)}…`)}) -> deny`;
    expect(length(longLine)).toBeGreaterThan(MAX_TRACE_LINE);
    await rewrite("spend_authorizations", "decision", { id: stored.id }, (d) => ({ ...d, trace: [longLine] }));
    await rewrite("spend_authorizations", "metadata", { id: stored.id }, () => ({ orderId: "ord\u0001\u009f" }));
    await withDatabase(ts.databaseUrl, (db) => db.updateTable("users").set({ display_name: "Old\u0007name" }).where("id", "=", subject.userId).execute());

    const clipped = `${[...longLine].slice(0, MAX_TRACE_LINE - 1).join("")}…`;
    const read = unwrap(await spend.get(stored.id)).authorization;
    expect(read.decision.trace).toEqual([clipped]);
    expect(read.metadata).toEqual({ orderId: "ord\u0001\u009f" });
    expect(unwrap(await spend.list({ app_id: app })).list.map((i) => i.authorization)).toEqual([read]);
    expect(unwrap(await ts.admin.GET("/api/v1/users/{user_id}", { params: { path: { user_id: subject.userId } } })).user.displayName).toBe("Old\u0007name");
    expect(unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100 } } })).list.map((u) => u.user.displayName)).toContain("Old\u0007name");
  });
});
