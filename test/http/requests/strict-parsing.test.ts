// Strict and consistent parsing (issue 14, finding 10), through HTTP: a failed oneOf names the arm
// the value chose and its field (not every arm's failures); a timestamp outside years 0001..9999 is
// told so, in a request and in a CEL step's result; text lengths are counted in code points, as the
// contract's maxLength counts them. Each refusal is compared with the example its operation
// documents, so the examples show what the server says.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { declaredErrors } from "../../support/declared-errors.js";
import type { TestServer } from "../../support/server.js";
import { amount, DAY, funds, money, newAppId, type Funds } from "../limits/helpers.js";
import { automationsApi, createHooked, type AutomationsApi } from "../webhooks/helpers.js";
import { startTestServer } from "../../support/server.js";

let ts: TestServer;
let admin: Funds;
let mine: Funds;
let subjectId: string;
let api: AutomationsApi;

beforeAll(async () => {
  ts = await startTestServer();
  admin = funds(ts.admin);
  api = automationsApi(ts.admin);
  const user = await ts.userClient(["ROLE_USER"]);
  subjectId = user.userId;
  mine = funds(user.client);
});
afterAll(async () => ts?.stop());

interface Answer {
  error?: unknown;
  response: Response;
}

interface Status {
  message: string;
  details: { "@type": string; reason?: string; fieldViolations?: { field: string; description: string }[] }[];
}

/** Status, reason and message of a refusal. */
function refusal(answer: Answer): { status: number; reason?: string; message: string } {
  const body = answer.error as Status;
  return { status: answer.response.status, reason: body.details.find((d) => d.reason)?.reason, message: body.message };
}

/** The refusal an operation documents under `name`. */
function documented(operationId: string, name: string): { status: number; reason: string; message: string } {
  const d = declaredErrors.find((e) => e.operationId === operationId && e.name === name);
  if (!d) throw new Error(`${operationId} documents no example ${name}`);
  return { status: d.status, reason: d.reason, message: d.message };
}

const violations = (answer: Answer) => (answer.error as Status).details.flatMap((d) => d.fieldViolations ?? []);

const future = () => new Date(ts.clock.now() + DAY).toISOString();

/** Every operation that takes a SpendLimit, sending `limit` where it carries one. */
const SURFACES: { operationId: string; at: string; send: (limit: unknown) => Promise<Answer> }[] = [
  { operationId: "svc.api.funds.v1.SubjectAppLimitService.SetLimit", at: "body.limit", send: (limit) => admin.setLimit(subjectId, newAppId(), { limit }) },
  { operationId: "svc.api.funds.v1.MyFundLimitsService.SetLimit", at: "body.limit", send: (limit) => mine.mySetLimit(newAppId(), { limit }) },
  {
    operationId: "svc.api.funds.v1.SubjectAppLimitService.SetExtension",
    at: "body.limit",
    send: (limit) => admin.setExtension(subjectId, newAppId(), { limit, expiresAt: future(), reason: "r" }),
  },
  { operationId: "svc.api.funds.v1.AppCapService.Set", at: "body.controls.limit", send: (limit) => admin.capSet(newAppId(), { controls: { limit } }) },
  {
    operationId: "svc.api.funds.v1.FundPolicyService.Update",
    at: "body.fundPolicy.defaultControls.limit",
    send: (limit) => admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: { limit } } }),
  },
];

describe("a failed oneOf names the arm the value chose and the field at fault", () => {
  for (const s of SURFACES) {
    describe(s.operationId.replace(/^svc\.api\./, ""), () => {
      it("a bad Money: its field only, not a failure of every arm", async () => {
        const answer = await s.send({ amount: { money: { currencyCode: "USD", units: 40, nanos: 0 } } });
        expect(refusal(answer)).toEqual(documented(s.operationId, "moneyUnitsNotString"));
        expect(violations(answer)).toEqual([{ field: `${s.at}.amount.money.units`, description: "must be string" }]);
        const pattern = await s.send({ amount: { money: money("1e3") } });
        expect(violations(pattern)).toEqual([{ field: `${s.at}.amount.money.units`, description: 'must match pattern "^(0|[1-9][0-9]{0,18})$"' }]);
        expect(violations(await s.send({ amount: { money: { currencyCode: "USD", units: "1" } } }))).toEqual([
          { field: `${s.at}.amount.money.nanos`, description: "must have required property 'nanos'" },
        ]);
        expect(violations(await s.send({ amount: { money: "1 USD" } }))).toEqual([{ field: `${s.at}.amount.money`, description: "must be object or null" }]);
        expect(violations(await s.send({ amount: "1" }))).toEqual([{ field: `${s.at}.amount`, description: "must be object" }]);
        expect(violations(await s.send({ ...amount("1"), colour: "red" }))).toEqual([{ field: `${s.at}.colour`, description: "must NOT have additional properties" }]);
      });

      it("no arm, or two arms: one failure that says what to set", async () => {
        for (const limit of [{}, { amount: null, blocked: null, unlimited: null }, { ...amount("1"), unlimited: {} }, { blocked: {}, unlimited: {} }]) {
          expect(refusal(await s.send(limit)), JSON.stringify(limit)).toEqual(documented(s.operationId, "limitArms"));
        }
        expect(violations(await s.send("unlimited"))).toEqual([{ field: s.at, description: s.at === "body.limit" ? "must be object" : "must be object or null" }]);
      });
    });
  }

  it("an automation's trigger with both methods, or a step of no kind (CreateAutomation, UpdateAutomation, CheckAutomationSteps)", async () => {
    const both = { displayName: "both", isDraft: true, triggers: [{ webhook: { hmac: {}, jwt: { jwksUrl: "https://keys.example.com/jwks.json" } } }], automationSteps: [] };
    const noKind = { displayName: "no kind", isDraft: true, triggers: [], automationSteps: [{ stepName: "parse" }] };
    const create = "svc.api.automations.v1.AutomationService.CreateAutomation";
    const update = "svc.api.automations.v1.AutomationService.UpdateAutomation";
    expect(refusal(await api.create(both))).toEqual(documented(create, "triggerMethods"));
    expect(refusal(await api.create(noKind))).toEqual(documented(create, "stepKinds"));
    const hooked = await createHooked(ts, { isDraft: true });
    expect(refusal(await api.update(hooked.id, both, "triggers"))).toEqual(documented(update, "triggerMethods"));
    expect(refusal(await api.update(hooked.id, noKind, "automationSteps"))).toEqual(documented(update, "stepKinds"));
    expect(refusal(await api.check({ automationSteps: noKind.automationSteps }))).toEqual(
      documented("svc.api.automations.v1.AutomationService.CheckAutomationSteps", "stepKinds"),
    );
    // A step of one kind with a bad name: the name, once, not once per kind.
    const badName = await api.check({ automationSteps: [{ stepName: "1bad", unsuspendAppLimit: { userIdCel: '"u"', appIdCel: '"a"' } }] });
    expect(violations(badName)).toEqual([{ field: "body.automationSteps.0.stepName", description: 'must match pattern "^[a-zA-Z_][a-zA-Z0-9_]{0,63}$"' }]);
  });
});

describe("timestamps are in years 0001 to 9999 (UTC), and a year outside is told so", () => {
  // Well formed, but 10000-01-01T04:00:00Z once in UTC.
  const beyond = "9999-12-31T23:00:00-05:00";

  it("an extension's expiresAt (SetExtension, AppCapService.Set, FundPolicyService.Update)", async () => {
    const extension = { limit: { unlimited: {} }, expiresAt: beyond, reason: "r" };
    expect(refusal(await admin.setExtension(subjectId, newAppId(), extension))).toEqual(
      documented("svc.api.funds.v1.SubjectAppLimitService.SetExtension", "timestampOutOfRange"),
    );
    expect(refusal(await admin.capSet(newAppId(), { controls: { limit: amount("1"), extension } }))).toEqual(documented("svc.api.funds.v1.AppCapService.Set", "timestampOutOfRange"));
    expect(refusal(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: { limit: amount("1"), extension } } }))).toEqual(
      documented("svc.api.funds.v1.FundPolicyService.Update", "timestampOutOfRange"),
    );
    // The last instant of 9999 is accepted.
    unwrap(await admin.setExtension(subjectId, newAppId(), { ...extension, expiresAt: "9999-12-31T23:59:59.999Z" }));
  });

  it("a step's expiresAtCel that evaluates to year 10114 says so, not that it is no timestamp", async () => {
    const step = (expiresAtCel: string) => ({
      stepName: "extend",
      setAppLimitExtension: { userIdCel: "ctx.trigger.userId", appIdCel: '"app-x"', limit: { unlimited: {} }, expiresAtCel },
    });
    const errorOf = async (expiresAtCel: string, samplePayload: Record<string, unknown> = {}) => {
      const report = unwrap(await api.check({ automationSteps: [step(expiresAtCel)], samplePayload: { userId: subjectId, ...samplePayload } }));
      return report.evaluations.find((e) => e.path.endsWith("expiresAtCel"))?.error;
    };
    const outOfRange = "expression must evaluate to a timestamp in years 0001 to 9999 (UTC), got year 10114";
    expect(await errorOf('timestamp("9999-12-31T00:00:00Z") + duration("1000000h")')).toBe(outOfRange);
    expect(await errorOf("ctx.trigger.until", { until: "10114-01-01T00:00:00Z" })).toBe(outOfRange);
    expect(await errorOf('timestamp("0001-01-01T00:00:00Z") - duration("1h")')).toBe("expression must evaluate to a timestamp in years 0001 to 9999 (UTC), got year 0");
    expect(await errorOf("ctx.trigger.until", { until: "next week" })).toBe('expression must evaluate to a timestamp or an RFC 3339 string, got "next week"');
  });
});

describe("lengths are counted in code points, as the contract's maxLength counts them", () => {
  const emoji = (n: number) => "\u{1F600}".repeat(n);

  it("a reason of 500 emoji is accepted, 501 refused (Suspend, SetExtension)", async () => {
    const app = newAppId();
    unwrap(await admin.setLimit(subjectId, app, { limit: amount("1") }));
    expect(unwrap(await admin.suspend(subjectId, app, { reason: emoji(500) })).limit?.controls?.suspension?.reason).toBe(emoji(500));
    expect(violations(await admin.suspend(subjectId, app, { reason: emoji(501) }))).toEqual([{ field: "body.reason", description: "must NOT have more than 500 characters" }]);
    unwrap(await admin.setExtension(subjectId, app, { limit: { unlimited: {} }, expiresAt: future(), reason: emoji(500) }));
    expect(violations(await admin.setExtension(subjectId, app, { limit: { unlimited: {} }, expiresAt: future(), reason: emoji(501) }))).toEqual([
      { field: "body.reason", description: "must NOT have more than 500 characters" },
    ]);
  });

  it("a display name of 200 emoji is accepted, 201 refused (UserService.Create, CreateAutomation)", async () => {
    const user = (displayName: string, n: number) => ts.admin.POST("/api/v1/users", { body: { displayName, email: `emoji${n}-${Date.now()}@example.com`, roles: ["ROLE_USER"] } });
    expect(unwrap(await user(emoji(200), 200)).user.displayName).toBe(emoji(200));
    expect(violations(await user(emoji(201), 201))).toEqual([{ field: "body.displayName", description: "must NOT have more than 200 characters" }]);
    const automation = (displayName: string) => api.create({ displayName, isDraft: true, triggers: [], automationSteps: [] });
    expect(unwrap(await automation(emoji(200))).automation.displayName).toBe(emoji(200));
    expect(violations(await automation(emoji(201)))).toEqual([{ field: "body.automation.displayName", description: "must NOT have more than 200 characters" }]);
  });
});
