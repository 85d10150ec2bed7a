// The 200 example of every operation has the keys the server really answers, and both carry every
// property their schemas declare (null where there is no value): a client written against the
// examples (e.g. testing `suspension !== null`) reads real answers the same way. Each operation is
// called for real, on state that fills what its example shows; operations added to the contract
// without a case here fail the first test.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { contract, deref, operations } from "../../support/contract.js";
import { example200, isObject, keyDifferences } from "../../support/example-keys.js";
import { failedDestination } from "../../support/destinations.js";
import { deliver, senderListener, type SenderKind } from "../../support/sender-deliveries.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";
import { amount, DAY, funds, money, newAppId, type Funds } from "../limits/helpers.js";
import { spends } from "../spends/helpers.js";
import { automationsApi, createHooked, evaluateStep, sendHmac, settled, type AutomationsApi, type Hooked, type Step } from "../webhooks/helpers.js";

type Node = Record<string, any>;

const admitsNull = (node: Node | undefined): boolean => {
  const s = deref(node);
  return s.type === "null" || (Array.isArray(s.type) && s.type.includes("null")) || ((s.oneOf ?? []) as Node[]).some(admitsNull);
};

/** The arm of a `oneOf` that describes `value`: for an object, the arm whose required fields it has and whose non-null fields it does not set to null. */
function arm(arms: Node[], value: unknown): Node | undefined {
  const resolved = arms.map(deref);
  if (value === null) return resolved.find((a) => a.type === "null");
  const fits = (a: Node) =>
    !isObject(value) ||
    (((a.required ?? []) as string[]).every((k) => k in value) && Object.entries(value).every(([k, v]) => v !== null || !a.properties?.[k] || admitsNull(a.properties[k])));
  return resolved.find((a) => a.type !== "null" && fits(a));
}

/** Properties the schema declares that `value` lacks, recursively. */
function missingProperties(schemaNode: Node | undefined, value: unknown, at = "$"): string[] {
  let schema = deref(schemaNode);
  while (schema.oneOf) {
    const chosen = arm(schema.oneOf as Node[], value);
    if (!chosen) return [`${at}: fits no arm of its oneOf`];
    schema = chosen;
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => missingProperties(schema.items as Node | undefined, item, `${at}[${i}]`));
  if (!isObject(value) || !schema.properties) return [];
  return Object.entries(schema.properties as Record<string, Node>).flatMap(([key, property]) =>
    key in value ? missingProperties(property, value[key], `${at}.${key}`) : [`${at}.${key}`],
  );
}

const schema200 = (operationId: string): Node => {
  const op = operations.find((o) => o.operationId === operationId)!.op;
  return (deref(op.responses["200"]).content["application/json"] as Node).schema as Node;
};

// ---- the state every case reads ------------------------------------------------------------

let ts: TestServer;
let admin: Funds;
let api: AutomationsApi;
let subjectId: string;
let mine: Funds;
let hook: Hooked;
let executionId: string;

const inFuture = () => new Date(ts.clock.now() + DAY).toISOString();

/** The example automation: parse the event, then suspend the user's app unless the card was not lost. */
const steps = (): Step[] => [
  evaluateStep("parse", { isLost: 'ctx.trigger.event == "card.lost"' }),
  { stepName: "suspend", skipIfTrueCel: "!ctx.steps.parse.isLost", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: 'ctx.trigger["appId"]', reasonCel: '"Card reported lost"' } },
];

/** A subject row holding every control: a limit with its period, a running extension and a suspension. */
async function fullRow(): Promise<string> {
  const app = newAppId("full");
  unwrap(await admin.setLimit(subjectId, app, { limit: amount("250"), period: "PERIOD_KIND_MONTHLY" }));
  unwrap(await admin.setExtension(subjectId, app, { limit: amount("500"), expiresAt: inFuture(), reason: "Quarter-end travel" }));
  unwrap(await admin.suspend(subjectId, app, { reason: "Card reported lost" }));
  return app;
}

/** An authorization of USD 15 on a fresh app whose row allows USD 100 a month, with an order id. */
async function spendBody() {
  const app = newAppId("spend");
  unwrap(await admin.setLimit(subjectId, app, { limit: amount("100"), period: "PERIOD_KIND_MONTHLY" }));
  return { userId: subjectId, appId: app, amount: money("15"), holdSeconds: 600, metadata: { orderId: "ord_8812" } };
}

/** The id of a pending authorization. */
const pending = async () => unwrap(await spends(ts.admin).authorize(await spendBody())).authorization.id;

/** A row of the caller's own with a limit and its period. */
async function myRow(): Promise<string> {
  const app = newAppId("mine");
  unwrap(await mine.mySetLimit(app, { limit: amount("75", 500_000_000), period: "PERIOD_KIND_WEEKLY" }));
  return app;
}

const automationBody = () => ({
  displayName: "Suspend Salesforce when card lost",
  description: "When the card system reports a lost card, suspend the user's Salesforce spend.",
  isDraft: false,
  enabled: true,
  triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: ["127.0.0.1/32"] } }],
  automationSteps: steps(),
});

beforeAll(async () => {
  // The sandbox, so that its own operations are bound; the others answer as on any server.
  ts = await startTestServer({}, undefined, { sandbox: true });
  admin = funds(ts.admin);
  api = automationsApi(ts.admin);
  const subject = await ts.userClient(["ROLE_USER"], "Subject");
  subjectId = subject.userId;
  mine = funds(subject.client);
  unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: { limit: amount("100"), period: "PERIOD_KIND_MONTHLY" } }, updateMask: "defaultControls" }));
  hook = await createHooked(ts, { steps: steps(), cidrs: ["127.0.0.1/32"] });
  const event = await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ event: "card.lost", userId: subjectId, appId: newAppId("hooked") }));
  executionId = event.body.webhookEvent.automationExecutionId;
  await settled(ts, executionId);
});
afterAll(async () => ts?.stop());

/** A real 200 answer of each operation. */
const CASES: Record<string, () => Promise<unknown>> = {
  "svc.api.iam.v1.TokenService.CreateToken": async () => {
    const r = await fetch(`${ts.url}/auth/v1/token`, { method: "POST", body: new URLSearchParams({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret }) });
    expect(r.status).toBe(200);
    return r.json();
  },
  "svc.api.iam.v1.UserService.Create": async () => unwrap(await ts.admin.POST("/api/v1/users", { body: { displayName: "Ada Lovelace", email: `ada-${newAppId()}@example.com`, roles: ["ROLE_USER"] } })),
  "svc.api.iam.v1.UserService.Get": async () => unwrap(await ts.admin.GET("/api/v1/users/{user_id}", { params: { path: { user_id: subjectId } } })),
  "svc.api.iam.v1.UserService.List": async () => unwrap(await ts.admin.GET("/api/v1/users")),
  "svc.api.iam.v1.CredentialService.Create": async () => unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: subjectId } }, body: { displayName: "billing-sync" } })),
  "svc.api.iam.v1.CredentialService.List": async () => unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: subjectId } } })),
  "svc.api.iam.v1.CredentialService.Revoke": async () => {
    const { credential } = unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: subjectId } }, body: {} }));
    return unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", { params: { path: { user_id: subjectId, credential_id: credential.id! } }, body: {} }));
  },
  "svc.api.funds.v1.SubjectAppLimitService.Get": async () => unwrap(await admin.get(subjectId, await fullRow())),
  "svc.api.funds.v1.SubjectAppLimitService.SetLimit": async () => {
    const app = await fullRow();
    return unwrap(await admin.setLimit(subjectId, app, { limit: amount("250"), period: "PERIOD_KIND_MONTHLY" }));
  },
  "svc.api.funds.v1.SubjectAppLimitService.Suspend": async () => unwrap(await admin.suspend(subjectId, await fullRow(), { reason: "Card reported lost" })),
  "svc.api.funds.v1.SubjectAppLimitService.Unsuspend": async () => unwrap(await admin.unsuspend(subjectId, await fullRow())),
  "svc.api.funds.v1.SubjectAppLimitService.SetExtension": async () =>
    unwrap(await admin.setExtension(subjectId, await fullRow(), { limit: amount("500"), expiresAt: inFuture(), reason: "Quarter-end travel" })),
  "svc.api.funds.v1.SubjectAppLimitService.ClearExtension": async () => unwrap(await admin.clearExtension(subjectId, await fullRow())),
  "svc.api.funds.v1.SubjectAppLimitService.Delete": async () => unwrap(await admin.delete(subjectId, await fullRow())),
  "svc.api.funds.v1.SubjectAppLimitService.GetEffective": async () => unwrap(await admin.effective(subjectId, await fullRow())),
  "svc.api.funds.v1.SubjectAppLimitService.Search": async () => {
    await fullRow();
    return unwrap(await admin.search({ userIds: [subjectId] }));
  },
  "svc.api.funds.v1.MyFundLimitsService.Get": async () => unwrap(await mine.myGet(await myRow())),
  "svc.api.funds.v1.MyFundLimitsService.SetLimit": async () => unwrap(await mine.mySetLimit(newAppId("mine"), { limit: amount("75", 500_000_000), period: "PERIOD_KIND_WEEKLY" })),
  "svc.api.funds.v1.MyFundLimitsService.ClearLimit": async () => unwrap(await mine.myClearLimit(await myRow())),
  "svc.api.funds.v1.MyFundLimitsService.GetEffective": async () => unwrap(await mine.myEffective(await myRow())),
  "svc.api.funds.v1.MyFundLimitsService.List": async () => {
    await myRow();
    return unwrap(await mine.myList());
  },
  "svc.api.funds.v1.AppCapService.Set": async () => unwrap(await admin.capSet(newAppId("cap"), { controls: { limit: amount("1000"), period: "PERIOD_KIND_MONTHLY" } })),
  "svc.api.funds.v1.AppCapService.Get": async () => {
    const app = newAppId("cap");
    unwrap(await admin.capSet(app, { controls: { limit: amount("1000"), period: "PERIOD_KIND_MONTHLY" } }));
    return unwrap(await admin.capGet(app));
  },
  "svc.api.funds.v1.AppCapService.List": async () => {
    unwrap(await admin.capSet(newAppId("cap"), { controls: { limit: amount("1000"), period: "PERIOD_KIND_MONTHLY" } }));
    return unwrap(await admin.capList());
  },
  "svc.api.funds.v1.AppCapService.Delete": async () => {
    const app = newAppId("cap");
    unwrap(await admin.capSet(app, { controls: { limit: amount("1000") } }));
    return unwrap(await admin.capDelete(app));
  },
  "svc.api.funds.v1.SpendService.Authorize": async () => unwrap(await spends(ts.admin).authorize(await spendBody())),
  "svc.api.funds.v1.SpendService.Simulate": async () => unwrap(await spends(ts.admin).simulate(await spendBody())),
  "svc.api.funds.v1.SpendService.Get": async () => unwrap(await spends(ts.admin).get(await pending())),
  "svc.api.funds.v1.SpendService.Capture": async () => unwrap(await spends(ts.admin).capture(await pending(), { amount: money("12", 500_000_000) })),
  "svc.api.funds.v1.SpendService.Release": async () => unwrap(await spends(ts.admin).release(await pending())),
  "svc.api.funds.v1.SpendService.Reverse": async () => {
    const { holdSeconds: _, ...direct } = await spendBody();
    const captured = unwrap(await spends(ts.admin).authorize({ ...direct, capture: true })).authorization.id;
    return unwrap(await spends(ts.admin).reverse(captured, { amount: money("5") }));
  },
  "svc.api.funds.v1.SpendService.List": async () => {
    const body = await spendBody();
    unwrap(await spends(ts.admin).authorize(body));
    unwrap(await spends(ts.admin).authorize({ ...body, amount: money("500") }));
    return unwrap(await spends(ts.admin).list({ user_id: subjectId, app_id: body.appId }));
  },
  "svc.api.audit.v1.AuditService.List": async () => {
    const appId = `app-audited-${Date.now()}`;
    unwrap(await admin.setLimit(subjectId, appId, { limit: amount("250"), period: "PERIOD_KIND_MONTHLY" }));
    return unwrap(await ts.admin.GET("/api/v1/audit-events", { params: { query: { target_kind: "AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT", user_id: subjectId, app_id: appId } } }));
  },
  "svc.api.funds.v1.FundPolicyService.Get": async () => unwrap(await admin.policyGet()),
  "svc.api.funds.v1.FundPolicyService.Update": async () =>
    unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: { limit: amount("150"), period: "PERIOD_KIND_MONTHLY" } }, updateMask: "defaultControls" })),
  "svc.api.automations.v1.AutomationService.CreateAutomation": async () => unwrap(await api.create(automationBody())),
  "svc.api.automations.v1.AutomationService.GetAutomation": async () => unwrap(await api.get(hook.id)),
  "svc.api.automations.v1.AutomationService.UpdateAutomation": async () => {
    const { automation } = unwrap(await api.create(automationBody()));
    return unwrap(await api.update(automation.id!, { displayName: "Renamed", description: "Renamed too" }, "displayName,description"));
  },
  "svc.api.automations.v1.AutomationService.DeleteAutomation": async () => unwrap(await api.delete(unwrap(await api.create(automationBody())).automation.id!)),
  "svc.api.automations.v1.AutomationService.ListAutomations": async () => unwrap(await api.list()),
  "svc.api.automations.v1.AutomationService.RotateWebhookSecret": async () => unwrap(await api.rotate(unwrap(await api.create(automationBody())).automation.id!)),
  "svc.api.automations.v1.AutomationService.RotateNotificationSecret": async () => {
    const notifying = { ...automationBody(), automationSteps: [{ stepName: "tell", skipIfTrueCel: 'ctx.trigger.event != "card.lost"', notify: { url: "https://hooks.example.com/limits", bodyCel: '{"type": "card.lost", "userId": ctx.trigger.userId}', signatureScheme: "NOTIFY_SIGNATURE_SCHEME_HMAC_SHA256" } }] };
    const { automation } = unwrap(await api.create(notifying));
    return unwrap(await ts.admin.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: automation.id! } }, body: {} }));
  },
  "svc.api.automations.v1.AutomationService.GetNotificationPublicKey": async () => {
    const signed = { ...automationBody(), automationSteps: [{ stepName: "tell", notify: { url: "https://hooks.example.com/limits", bodyCel: "{}", signatureScheme: "NOTIFY_SIGNATURE_SCHEME_ED25519" } }] };
    const { automation } = unwrap(await api.create(signed));
    return unwrap(await ts.admin.GET("/api/v1/automations/{id}/notification-public-key", { params: { path: { id: automation.id! } } }));
  },
  "svc.api.automations.v1.AutomationService.CheckAutomationSteps": async () =>
    unwrap(
      await api.check({
        automationSteps: [...steps(), { stepName: "bad", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: '"app"', reasonCel: "1" } }],
        samplePayload: { event: "card.lost", userId: subjectId, appId: "app-salesforce" },
      }),
    ),
  "svc.api.automations.v1.AutomationExecutionService.ListAutomationExecutions": async () => unwrap(await api.executions({ automation_id: hook.id })),
  "svc.api.automations.v1.AutomationExecutionService.GetAutomationExecution": async () => unwrap(await api.execution(executionId)),
  "svc.api.automations.v1.AutomationExecutionService.Redrive": async () => {
    // A lost card of a subject that does not exist: the suspend step fails.
    const failing = await createHooked(ts, { steps: steps() });
    const event = await sendHmac(ts, failing.url, failing.secret, JSON.stringify({ event: "card.lost", userId: "no-such-user", appId: newAppId("hooked") }));
    const failed = await settled(ts, event.body.webhookEvent.automationExecutionId);
    expect(failed.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    return unwrap(await api.redrive(failed.id));
  },
  "svc.api.automations.v1.AutomationExecutionService.BulkRedrive": async () => {
    const failing = await createHooked(ts, { steps: steps() });
    const event = await sendHmac(ts, failing.url, failing.secret, JSON.stringify({ event: "card.lost", userId: "no-such-user", appId: newAppId("hooked") }));
    expect((await settled(ts, event.body.webhookEvent.automationExecutionId)).state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    ts.clock.advance(1);
    const range = { since: "2026-01-01T00:00:00Z", until: new Date(ts.clock.now()).toISOString(), includeParked: true };
    return unwrap(await ts.admin.POST("/api/v1/automations/{id}/executions/redrive", { params: { path: { id: failing.id } }, body: range }));
  },
  "svc.api.automations.v1.NotificationDestinationService.List": async () => {
    await failedDestination(ts.databaseUrl, `${newAppId()}.example.com:443`, new Date(ts.clock.now()).toISOString());
    return unwrap(await ts.admin.GET("/api/v1/notification-destinations"));
  },
  "svc.api.automations.v1.NotificationDestinationService.Get": async () => unwrap(await ts.admin.GET("/api/v1/notification-destinations/{destination_id}", await failedOne())),
  "svc.api.automations.v1.NotificationDestinationService.Enable": async () => unwrap(await ts.admin.POST("/api/v1/notification-destinations/{destination_id}/enable", { ...(await failedOne()), body: {} })),
  "svc.api.automations.v1.NotificationDestinationService.Disable": async () => unwrap(await ts.admin.POST("/api/v1/notification-destinations/{destination_id}/disable", { ...(await failedOne()), body: {} })),
  "svc.api.sandbox.v1.SandboxClockService.Get": async () => unwrap(await ts.admin.GET("/api/v1/sandbox/clock")),
  // A second: the intake's cases after it sign with the test's clock, within its 5-minute window.
  "svc.api.sandbox.v1.SandboxClockService.Advance": async () => unwrap(await ts.admin.POST("/api/v1/sandbox/clock/advance", { body: { duration: "1s" } })),
  "svc.api.automations.v1.WebhookEventService.ListWebhookEvents": async () => unwrap(await api.events(hook.id)),
  "svc.api.automations.v1.WebhookEventService.Replay": async () => unwrap(await api.replay(hook.id, (await api.events(hook.id)).data!.list[0]!.webhookEvent.eventId)),
  "svc.api.webhooks.v1.IncomingWebhookService.Receive": async () => {
    const answer = await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ event: "card.lost", userId: subjectId, appId: newAppId("hooked") }));
    expect(answer.status).toBe(200);
    return answer.body;
  },
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStandardWebhook": () => delivered("standardWebhooks"),
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveGithubWebhook": () => delivered("github"),
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStripeWebhook": () => delivered("stripe"),
};

/** A delivery accepted by a listener of `kind` of its own: the recorded event, with the execution it started. */
async function delivered(kind: SenderKind): Promise<unknown> {
  const answer = await deliver(ts, kind, await senderListener(ts, kind));
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

/** A failed destination of its own, as the path parameters that name it. */
const failedOne = async () => ({ params: { path: { destination_id: await failedDestination(ts.databaseUrl, `${newAppId()}.example.com:443`, new Date(ts.clock.now()).toISOString()) } } });

describe("200 examples against real answers", () => {
  it("every operation of the contract has a case, and every case an operation", () => {
    expect(Object.keys(CASES).sort()).toEqual(operations.filter((o) => deref(o.op.responses["200"]).content?.["application/json"]).map((o) => o.operationId).sort());
  });

  for (const { operationId } of operations) {
    it(`${operationId.replace(/^svc\.api\./, "")}: the example has the real answer's keys, and both every declared property`, async () => {
      const run = CASES[operationId];
      expect(run, `no case for ${operationId}`).toBeDefined();
      const example = example200(operationId);
      const real = await run!();
      expect(missingProperties(schema200(operationId), example), "declared properties missing from the example").toEqual([]);
      expect(missingProperties(schema200(operationId), real), `declared properties missing from the real answer ${JSON.stringify(real)}`).toEqual([]);
      expect(keyDifferences(example, real), `real answer: ${JSON.stringify(real)}`).toEqual([]);
    });
  }
});
