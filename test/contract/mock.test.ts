// What a partner team sees: every operation of the contract called on the running mock
// (`npm run mock`'s command: Prism behind the mock's own request checks) through the typed client built on the generated
// types, each answer valid against the contract. The last test checks that none was left out.
import { createServer, type AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { Middleware } from "openapi-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient, paginate, type ApiClient } from "../../src/client/index.js";
import { operations, responseErrors } from "../support/contract.js";
import { startMock } from "../support/mock.js";
import { SENDER_OPERATIONS, senderBody, senderHeaders, UNKNOWN_SECRET, type SenderKind } from "../support/sender-deliveries.js";
import { accepting, runToEnd, terminate, type Served } from "../support/process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

let mock: Served;
let api: ApiClient;
let anonymous: ApiClient;
const called = new Set<string>();

/** Records which operation each request reached, by method and path template. */
const recorder: Middleware = {
  onRequest({ request, schemaPath }) {
    const op = operations.find((o) => o.path === schemaPath && o.method === request.method.toLowerCase());
    if (op) called.add(op.operationId);
    return undefined;
  },
};

beforeAll(async () => {
  mock = await startMock();
  // Prism checks that credentials are present, not what they are; the client fetches its token from the mock too.
  api = createApiClient({ baseUrl: mock.url, credentials: { clientId: "c1_2Qk3mN8rT1vX9yZ0ab", clientSecret: "x".repeat(43) } });
  anonymous = createApiClient({ baseUrl: mock.url });
  api.use(recorder);
  anonymous.use(recorder);
});
afterAll(async () => mock?.stop());

/** The ErrorInfo reason of an error body. */
const reasonOf = (body: unknown): string | undefined =>
  (body as { details?: { "@type": string; reason?: string }[] } | undefined)?.details?.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo")?.reason;

/** Asserts a 200 answer whose body is valid for the operation, and returns the body. */
function ok<T>(operationId: string, result: { data?: T; error?: unknown; response: Response }): T {
  expect(result.response.status, `${operationId}: ${JSON.stringify(result.error)}`).toBe(200);
  expect(responseErrors(operationId, 200, result.data), operationId).toEqual([]);
  return result.data as T;
}

const user = { user_id: "2Qk3mN8rT1vX9yZ0" };
const row = { user_id: "2Qk3mN8rT1vX9yZ0", app_id: "app-salesforce" };
const usd = (units: string) => ({ amount: { money: { currencyCode: "USD", units, nanos: 0 } } });

describe("the mock answers every operation with data valid against the contract", () => {
  it("identity", async () => {
    ok(
      "svc.api.iam.v1.TokenService.CreateToken",
      await anonymous.POST("/auth/v1/token", {
        body: { grant_type: "client_credentials", client_id: "c1_2Qk3mN8rT1vX9yZ0ab", client_secret: "s".repeat(43) },
        bodySerializer: (b) => new URLSearchParams(b as Record<string, string>).toString(),
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      }),
    );
    const created = ok(
      "svc.api.iam.v1.UserService.Create",
      await api.POST("/api/v1/users", { body: { displayName: "Ada Lovelace", email: "ada@example.com", roles: ["ROLE_USER"] } }),
    );
    expect(created.user.id).toBeTruthy();
    ok("svc.api.iam.v1.UserService.Get", await api.GET("/api/v1/users/{user_id}", { params: { path: user } }));
    ok("svc.api.iam.v1.UserService.List", await api.GET("/api/v1/users", { params: { query: { page_size: 10 } } }));
    const credential = ok(
      "svc.api.iam.v1.CredentialService.Create",
      await api.POST("/api/v1/users/{user_id}/credentials", { params: { path: user }, body: { displayName: "CI pipeline" } }),
    );
    expect(credential.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    ok("svc.api.iam.v1.CredentialService.List", await api.GET("/api/v1/users/{user_id}/credentials", { params: { path: user } }));
    ok(
      "svc.api.iam.v1.CredentialService.Revoke",
      await api.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", {
        params: { path: { ...user, credential_id: "Cr8dT5vB2nM4kP6q" } },
        body: {},
      }),
    );
  });

  it("subject app limits", async () => {
    const path = { params: { path: row } };
    ok("svc.api.funds.v1.SubjectAppLimitService.Get", await api.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}", path));
    ok(
      "svc.api.funds.v1.SubjectAppLimitService.SetLimit",
      await api.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { ...path, body: { limit: usd("250"), period: "PERIOD_KIND_MONTHLY" } }),
    );
    const suspended = ok(
      "svc.api.funds.v1.SubjectAppLimitService.Suspend",
      await api.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", { ...path, body: { reason: "Card reported lost" } }),
    );
    expect(suspended.limit?.controls?.suspension).toBeTruthy();
    ok("svc.api.funds.v1.SubjectAppLimitService.Unsuspend", await api.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", path));
    ok(
      "svc.api.funds.v1.SubjectAppLimitService.SetExtension",
      await api.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/extension", {
        ...path,
        body: { limit: usd("500"), expiresAt: "2026-12-01T00:00:00Z", reason: "Quarter-end travel" },
      }),
    );
    ok("svc.api.funds.v1.SubjectAppLimitService.ClearExtension", await api.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/extension", path));
    ok("svc.api.funds.v1.SubjectAppLimitService.GetEffective", await api.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/effective", path));
    ok(
      "svc.api.funds.v1.SubjectAppLimitService.Search",
      await api.POST("/api/v1/funds/subject-app-limits/search", { body: { appIds: ["app-salesforce"], suspended: true, pageSize: 25 } }),
    );
    ok("svc.api.funds.v1.SubjectAppLimitService.Delete", await api.DELETE("/api/v1/funds/subject-app-limits/{user_id}/{app_id}", path));
  });

  it("my fund limits", async () => {
    const app = { params: { path: { app_id: "app-github" } } };
    const set = ok(
      "svc.api.funds.v1.MyFundLimitsService.SetLimit",
      await api.POST("/api/v1/funds/my/app-limits/{app_id}/limit", { ...app, body: { limit: usd("40"), period: "PERIOD_KIND_WEEKLY" } }),
    );
    expect(set.limit).not.toHaveProperty("userId");
    ok("svc.api.funds.v1.MyFundLimitsService.Get", await api.GET("/api/v1/funds/my/app-limits/{app_id}", app));
    ok("svc.api.funds.v1.MyFundLimitsService.List", await api.GET("/api/v1/funds/my/app-limits", { params: { query: { page_size: 25 } } }));
    ok("svc.api.funds.v1.MyFundLimitsService.GetEffective", await api.GET("/api/v1/funds/my/app-limits/{app_id}/effective", app));
    ok("svc.api.funds.v1.MyFundLimitsService.ClearLimit", await api.DELETE("/api/v1/funds/my/app-limits/{app_id}/limit", app));
  });

  it("spends", async () => {
    const money = { currencyCode: "USD", units: "15", nanos: 0 };
    const authorized = ok(
      "svc.api.funds.v1.SpendService.Authorize",
      await api.POST("/api/v1/funds/spend-authorizations", {
        params: { header: { "Idempotency-Key": "5f1d7c2e-8a4b-4c3d-9e2f-0a1b2c3d4e5f" } },
        body: { userId: "2Qk3mN8rT1vX9yZ0", appId: "app-salesforce", amount: money },
      }),
    );
    const id = { params: { path: { authorization_id: authorized.authorization.id } } };
    ok("svc.api.funds.v1.SpendService.Simulate", await api.POST("/api/v1/funds/spend-authorizations/simulate", { body: { userId: "2Qk3mN8rT1vX9yZ0", appId: "app-salesforce", amount: money } }));
    ok("svc.api.funds.v1.SpendService.Get", await api.GET("/api/v1/funds/spend-authorizations/{authorization_id}", id));
    ok("svc.api.funds.v1.SpendService.List", await api.GET("/api/v1/funds/spend-authorizations", { params: { query: { app_id: "app-salesforce" } } }));
    ok("svc.api.funds.v1.SpendService.Capture", await api.POST("/api/v1/funds/spend-authorizations/{authorization_id}/capture", { ...id, body: { amount: money } }));
    ok("svc.api.funds.v1.SpendService.Release", await api.POST("/api/v1/funds/spend-authorizations/{authorization_id}/release", { ...id, body: {} }));
    ok("svc.api.funds.v1.SpendService.Reverse", await api.POST("/api/v1/funds/spend-authorizations/{authorization_id}/reverse", { ...id, body: {} }));
  });

  it("app caps and the fund policy", async () => {
    const app = { params: { path: { app_id: "app-salesforce" } } };
    ok(
      "svc.api.funds.v1.AppCapService.Set",
      await api.POST("/api/v1/funds/app-caps/{app_id}", { ...app, body: { controls: { limit: usd("1000"), period: "PERIOD_KIND_MONTHLY" } } }),
    );
    ok("svc.api.funds.v1.AppCapService.Get", await api.GET("/api/v1/funds/app-caps/{app_id}", app));
    ok("svc.api.funds.v1.AppCapService.List", await api.GET("/api/v1/funds/app-caps", {}));
    ok("svc.api.funds.v1.AppCapService.Delete", await api.DELETE("/api/v1/funds/app-caps/{app_id}", app));
    const policy = ok("svc.api.funds.v1.FundPolicyService.Get", await api.GET("/api/v1/funds/policy", {}));
    expect(policy.fundPolicy.currencyCode).toMatch(/^[A-Z]{3}$/);
    ok(
      "svc.api.funds.v1.FundPolicyService.Update",
      await api.POST("/api/v1/funds/policy", {
        body: { fundPolicy: { currencyCode: "USD", defaultControls: { limit: { unlimited: {} } } }, updateMask: "defaultControls" },
      }),
    );
  });

  it("automations, executions and the delivery log", async () => {
    const created = ok(
      "svc.api.automations.v1.AutomationService.CreateAutomation",
      await api.POST("/api/v1/automations", {
        body: {
          automation: {
            displayName: "Suspend Salesforce when card lost",
            isDraft: true,
            enabled: true,
            triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: ["203.0.113.0/24"] } }],
            automationSteps: [
              { stepName: "parse", evaluateExpressions: { expressions: [{ name: "isLost", expression: 'ctx.trigger.event == "card.lost"' }] } },
              { stepName: "suspend", skipIfTrueCel: "!ctx.steps.parse.isLost", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: 'ctx.trigger["appId"]' } },
            ],
          },
        },
      }),
    );
    const id = { params: { path: { id: created.automation.id ?? "aut_5Xn2Bq8Rk4Lm7Pz1" } } };
    ok("svc.api.automations.v1.AutomationService.GetAutomation", await api.GET("/api/v1/automations/{id}", id));
    ok(
      "svc.api.automations.v1.AutomationService.UpdateAutomation",
      await api.POST("/api/v1/automations/{id}", { ...id, body: { automation: { displayName: "Suspend Salesforce when card lost", isDraft: false }, updateMask: "isDraft" } }),
    );
    ok("svc.api.automations.v1.AutomationService.ListAutomations", await api.GET("/api/v1/automations", {}));
    const rotated = ok("svc.api.automations.v1.AutomationService.RotateWebhookSecret", await api.POST("/api/v1/automations/{id}/webhook-secret", { ...id, body: {} }));
    expect(rotated.webhookSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const notification = ok("svc.api.automations.v1.AutomationService.RotateNotificationSecret", await api.POST("/api/v1/automations/{id}/notification-secret", { ...id, body: {} }));
    expect(notification.notificationSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(notification.automation.automationSteps?.[0]).toMatchObject({ notify: { url: "https://hooks.example.com/limits" } });
    const publicKey = ok("svc.api.automations.v1.AutomationService.GetNotificationPublicKey", await api.GET("/api/v1/automations/{id}/notification-public-key", id));
    expect(publicKey.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(publicKey.jwk).toMatchObject({ kty: "OKP", crv: "Ed25519" });
    const checked = ok(
      "svc.api.automations.v1.AutomationService.CheckAutomationSteps",
      await api.POST("/api/v1/automation-steps/check", {
        body: { automationSteps: [{ stepName: "parse", evaluateExpressions: { expressions: [{ name: "isLost", expression: "true" }] } }], samplePayload: {} },
      }),
    );
    expect(checked.problems).toEqual(expect.any(Array));
    ok("svc.api.automations.v1.WebhookEventService.ListWebhookEvents", await api.GET("/api/v1/automations/{id}/webhook-events", id));
    ok(
      "svc.api.automations.v1.AutomationExecutionService.ListAutomationExecutions",
      await api.GET("/api/v1/automation_executions", { params: { query: { automation_id: "aut_5Xn2Bq8Rk4Lm7Pz1" } } }),
    );
    ok(
      "svc.api.automations.v1.AutomationExecutionService.GetAutomationExecution",
      await api.GET("/api/v1/automation_executions/{id}", { params: { path: { id: "exe_3Vt8Mq1Kc6Hn9Rw2" } } }),
    );
    const redrive = ok(
      "svc.api.automations.v1.AutomationExecutionService.Redrive",
      await api.POST("/api/v1/automation_executions/{id}/redrive", { params: { path: { id: "exe_8Hc5Rz2Mw7Ty4Ld1" } }, body: {}, headers: { "Idempotency-Key": "mock-redrive-1" } }),
    );
    expect(redrive.automationExecution).toMatchObject({ origin: "AUTOMATION_EXECUTION_ORIGIN_REDRIVE", redriveOf: expect.any(String) });
    const bulk = ok(
      "svc.api.automations.v1.AutomationExecutionService.BulkRedrive",
      await api.POST("/api/v1/automations/{id}/executions/redrive", { params: { path: { id: "aut_5Xn2Bq8Rk4Lm7Pz1" } }, body: { since: "2026-01-10T06:00:00Z", until: "2026-01-10T09:00:00Z" } }),
    );
    expect(bulk).toMatchObject({ redrivenCount: expect.any(Number), continuationToken: "" });
    const replay = ok(
      "svc.api.automations.v1.WebhookEventService.Replay",
      await api.POST("/api/v1/automations/{id}/webhook-events/{event_id}/replay", { params: { path: { id: "aut_5Xn2Bq8Rk4Lm7Pz1", event_id: "3f1c9a52-7d4e-4b8a-9c21-5e6f7a8b9c0d" } }, body: {} }),
    );
    expect(replay.automationExecution).toMatchObject({ origin: "AUTOMATION_EXECUTION_ORIGIN_REPLAY", eventId: "3f1c9a52-7d4e-4b8a-9c21-5e6f7a8b9c0d" });
    ok("svc.api.automations.v1.AutomationService.DeleteAutomation", await api.DELETE("/api/v1/automations/{id}", id));
  });

  it("notification destinations", async () => {
    const destination = { params: { path: { destination_id: "dst_ee14b341d1e327cdf722545f" } } };
    const listed = ok("svc.api.automations.v1.NotificationDestinationService.List", await api.GET("/api/v1/notification-destinations"));
    expect(listed.list[0]?.notificationDestination.destination).toBe("hooks.example.com:443");
    ok("svc.api.automations.v1.NotificationDestinationService.Get", await api.GET("/api/v1/notification-destinations/{destination_id}", destination));
    const enabled = ok("svc.api.automations.v1.NotificationDestinationService.Enable", await api.POST("/api/v1/notification-destinations/{destination_id}/enable", { ...destination, body: {} }));
    expect(enabled.notificationDestination.state).toBe("NOTIFICATION_DESTINATION_STATE_HEALTHY");
    const disabled = ok("svc.api.automations.v1.NotificationDestinationService.Disable", await api.POST("/api/v1/notification-destinations/{destination_id}/disable", { ...destination, body: {} }));
    expect(disabled.notificationDestination.state).toBe("NOTIFICATION_DESTINATION_STATE_DISABLED");
  });

  it("the sandbox's clock: the mock answers its examples, as the sandbox would", async () => {
    const clock = ok("svc.api.sandbox.v1.SandboxClockService.Get", await api.GET("/api/v1/sandbox/clock"));
    expect(clock.sandboxClock).toEqual({ now: "2026-11-20T10:00:00.000Z", offset: "0s" });
    const moved = ok("svc.api.sandbox.v1.SandboxClockService.Advance", await api.POST("/api/v1/sandbox/clock/advance", { body: { duration: "60s" } }));
    expect(moved.sandboxClock).toEqual({ now: "2026-11-20T10:01:00.000Z", offset: "60s" });
  });

  it("the audit trail", async () => {
    const listed = ok(
      "svc.api.audit.v1.AuditService.List",
      await api.GET("/api/v1/audit-events", { params: { query: { target_kind: "AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT", user_id: "2Qk3mN8rT1vX9yZ0", app_id: "app-salesforce" } } }),
    );
    expect(listed.list[0]?.auditEvent.target.kind).toBe("AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT");
  });

  it("the inbound webhook", async () => {
    const received = ok(
      "svc.api.webhooks.v1.IncomingWebhookService.Receive",
      await anonymous.POST("/api/v1/webhooks/incoming/{listener_id}", {
        params: {
          path: { listener_id: "wh_7Hq2Lr9sVx3mNc8K" },
          header: { "Webhook-Timestamp": String(Math.floor(Date.now() / 1000)), "Webhook-Event-Id": "0b7c5a1e-3f2d-4c6b-9a8e-1d2f3a4b5c6d" },
        },
        headers: { "Webhook-Signature": "oJ1gnmGDFCtg8fJkJEJO4fSy5yUGBQjRFjdLN6WffaE" },
        body: { event: "card.lost", userId: "2Qk3mN8rT1vX9yZ0", appId: "app-salesforce" },
      }),
    );
    expect(received.webhookEvent.eventId).toBeTruthy();
  });

  it("the intake of each sender kind: any signature of the sender's scheme (no secret is known here)", async () => {
    const listener = { listener_id: "wh_7Hq2Lr9sVx3mNc8K" };
    const timestamp = String(Math.floor(Date.now() / 1000));
    const id = "evt_1NG8Du2eZvKYlo2CUI79vXWy";
    const signed = (kind: SenderKind) => senderHeaders(kind, UNKNOWN_SECRET, senderBody(kind, id), { id, timestamp });
    const body = (kind: SenderKind) => JSON.parse(senderBody(kind, id)) as Record<string, unknown>;
    const standard = ok(
      SENDER_OPERATIONS.standardWebhooks,
      await anonymous.POST("/api/v1/webhooks/incoming/{listener_id}/standard-webhooks", {
        params: { path: listener, header: { "webhook-id": id, "webhook-timestamp": timestamp } },
        headers: await signed("standardWebhooks"),
        body: body("standardWebhooks"),
      }),
    );
    const github = ok(
      SENDER_OPERATIONS.github,
      await anonymous.POST("/api/v1/webhooks/incoming/{listener_id}/github", {
        params: { path: listener, header: { "X-GitHub-Delivery": id, "X-GitHub-Event": "push" } },
        headers: await signed("github"),
        body: body("github"),
      }),
    );
    const stripe = ok(
      SENDER_OPERATIONS.stripe,
      await anonymous.POST("/api/v1/webhooks/incoming/{listener_id}/stripe", { params: { path: listener }, headers: await signed("stripe"), body: body("stripe") }),
    );
    for (const received of [standard, github, stripe]) expect(received.webhookEvent.eventType).toBeTruthy();
  });
});

describe("the mock refuses what the contract refuses, with the contract's error body", () => {
  // Each refusal is compared with the real server's in mock-vs-server.test.ts; here, the Status shape.
  it("a request without credentials is 401 MISSING_ACCESS_TOKEN", async () => {
    const r = await anonymous.GET("/api/v1/funds/policy", {});
    expect(r.response.status).toBe(401);
    expect(reasonOf(r.error)).toBe("MISSING_ACCESS_TOKEN");
    expect(responseErrors("svc.api.funds.v1.FundPolicyService.Get", 401, r.error)).toEqual([]);
  });

  it("a SpendLimit with two arms is 400 naming the field", async () => {
    const r = await api.POST("/api/v1/funds/my/app-limits/{app_id}/limit", {
      params: { path: { app_id: "app-github" } },
      // @ts-expect-error two arms of the oneof: the generated types refuse it too
      body: { limit: { ...usd("40"), unlimited: {} } },
    });
    expect(r.response.status).toBe(400);
    expect(r.error?.message).toMatch(/^body\.limit/);
    expect(responseErrors("svc.api.funds.v1.MyFundLimitsService.SetLimit", 400, r.error)).toEqual([]);
  });

  it("a units number instead of a decimal string is 400 naming the field, not every arm of the SpendLimit", async () => {
    const r = await api.POST("/api/v1/funds/my/app-limits/{app_id}/limit", {
      params: { path: { app_id: "app-github" } },
      // @ts-expect-error units is an int64 carried as a string
      body: { limit: { amount: { money: { currencyCode: "USD", units: 40, nanos: 0 } } } },
    });
    expect(r.response.status).toBe(400);
    expect(r.error?.message).toBe("body.limit.amount.money.units: must be string");
  });
});

describe("a pagination loop written against the mock ends", () => {
  it("a list's example shows a next page; its token sent back answers the example as the last page, in the query and in a Search body", async () => {
    const first = ok("svc.api.iam.v1.UserService.List", await api.GET("/api/v1/users", {}));
    expect(first.nextPageToken).not.toBe("");
    const users = [];
    for await (const { user } of paginate(async (page_token) => ok("svc.api.iam.v1.UserService.List", await api.GET("/api/v1/users", { params: { query: { page_token } } })))) users.push(user);
    expect(users).toEqual([...first.list, ...first.list].map((u) => u.user));
    const search = async (pageToken: string) => ok("svc.api.funds.v1.SubjectAppLimitService.Search", await api.POST("/api/v1/funds/subject-app-limits/search", { body: { pageToken } }));
    const token = (await search("")).nextPageToken;
    expect(token).not.toBe("");
    expect((await search(token)).nextPageToken).toBe("");
  });
});

describe("the mock takes what the server takes", () => {
  it("a page_size of any length in decimal digits (the server clamps it to 10..100), in the query and in a Search body", async () => {
    for (const page_size of ["2147483648", "9".repeat(400), "-1"]) {
      ok("svc.api.iam.v1.UserService.List", await api.GET("/api/v1/users", { params: { query: { page_size: page_size as never } } }));
    }
    ok("svc.api.funds.v1.SubjectAppLimitService.Search", await api.POST("/api/v1/funds/subject-app-limits/search", { body: { pageSize: 2_147_483_648 } }));
  });

  it("a query value holding reserved characters as they are: the contract's own window_start example", async () => {
    const grant = await fetch(`${mock.url}/auth/v1/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: "c1_2Qk3mN8rT1vX9yZ0ab", client_secret: "s".repeat(43) }),
    });
    const { access_token } = (await grant.json()) as { access_token: string };
    const listed = await fetch(`${mock.url}/api/v1/funds/spend-authorizations?window_start=2026-11-01T00:00:00Z&user_id=tenant:2Qk3mN8rT1vX9yZ0`, { headers: { Authorization: `Bearer ${access_token}` } });
    expect(listed.status, await listed.clone().text()).toBe(200);
    expect(responseErrors("svc.api.funds.v1.SpendService.List", 200, await listed.json())).toEqual([]);
  });

  it("objects read from answers, sent back as they are: their read-only fields are ignored", async () => {
    const { fundPolicy } = ok("svc.api.funds.v1.FundPolicyService.Get", await api.GET("/api/v1/funds/policy", {}));
    expect(fundPolicy.updatedAt).toEqual(expect.any(String));
    ok("svc.api.funds.v1.FundPolicyService.Update", await api.POST("/api/v1/funds/policy", { body: { fundPolicy } }));
    const id = { params: { path: { id: "aut_5Xn2Bq8Rk4Lm7Pz1" } } };
    const { automation } = ok("svc.api.automations.v1.AutomationService.GetAutomation", await api.GET("/api/v1/automations/{id}", id));
    expect(automation).toMatchObject({ id: expect.any(String), createdAt: expect.any(String), triggers: [{ webhook: { listenerId: expect.any(String), url: expect.any(String) } }] });
    ok("svc.api.automations.v1.AutomationService.CreateAutomation", await api.POST("/api/v1/automations", { body: { automation } }));
    ok("svc.api.automations.v1.AutomationService.UpdateAutomation", await api.POST("/api/v1/automations/{id}", { ...id, body: { automation, updateMask: "displayName,triggers" } }));
  });

  it("HEAD on a GET operation, answered as the GET without its body (a token required as for the GET)", async () => {
    const grant = await fetch(`${mock.url}/auth/v1/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: "c1_2Qk3mN8rT1vX9yZ0ab", client_secret: "s".repeat(43) }),
    });
    const { access_token } = (await grant.json()) as { access_token: string };
    const url = `${mock.url}/api/v1/funds/policy`;
    const get = await fetch(url, { headers: { Authorization: `Bearer ${access_token}` } });
    const head = await fetch(url, { method: "HEAD", headers: { Authorization: `Bearer ${access_token}` } });
    expect([head.status, head.headers.get("content-type")]).toEqual([get.status, get.headers.get("content-type")]);
    expect(get.status).toBe(200);
    expect(await head.text()).toBe("");
    const anonymousHead = await fetch(url, { method: "HEAD" });
    expect(anonymousHead.status).toBe((await fetch(url)).status);
    expect(anonymousHead.status).toBe(401);
  });
});

describe("Prefer forces a documented answer, in the Status body with the request's id", () => {
  const appCap = { params: { path: { app_id: "app-salesforce" } } };

  it("Prefer: code=404 answers the operation's documented 404", async () => {
    const r = await api.GET("/api/v1/funds/app-caps/{app_id}", { ...appCap, headers: { Prefer: "code=404", "X-Request-Id": "req-forced-404" } });
    expect(r.response.status).toBe(404);
    expect(responseErrors("svc.api.funds.v1.AppCapService.Get", 404, r.error)).toEqual([]);
    expect(r.response.headers.get("x-request-id")).toBe("req-forced-404");
    expect(r.error?.details).toContainEqual({ "@type": "type.googleapis.com/google.rpc.RequestInfo", requestId: "req-forced-404" });
  });

  it("Prefer: code=400, example=<name> answers that named example (the token endpoint's OAuth shape)", async () => {
    const r = await anonymous.POST("/auth/v1/token", {
      body: { grant_type: "client_credentials", client_id: "c1_2Qk3mN8rT1vX9yZ0ab", client_secret: "s".repeat(43) },
      bodySerializer: (b) => new URLSearchParams(b as Record<string, string>).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Prefer: "code=400, example=unsupportedGrantType" },
    });
    expect(r.response.status).toBe(400);
    expect(responseErrors("svc.api.iam.v1.TokenService.CreateToken", 400, r.error)).toEqual([]);
    expect(reasonOf(r.error)).toBe("UNSUPPORTED_GRANT_TYPE");
    expect(r.error).toMatchObject({ error: "unsupported_grant_type", error_description: "body.grant_type: must be client_credentials" });
  });

  it("Redrive and Replay: a documented refusal by Prefer, and a body with a field refused as the server refuses it", async () => {
    const redrive = "svc.api.automations.v1.AutomationExecutionService.Redrive";
    const path = { params: { path: { id: "exe_9Tg3Hs6Wq1Zc4Nv8" } } };
    const notFailed = await api.POST("/api/v1/automation_executions/{id}/redrive", { ...path, body: {}, headers: { Prefer: "code=409, example=executionNotFailed" } });
    expect(notFailed.response.status).toBe(409);
    expect(reasonOf(notFailed.error)).toBe("EXECUTION_NOT_FAILED");
    expect(responseErrors(redrive, 409, notFailed.error)).toEqual([]);
    const replay = "svc.api.automations.v1.WebhookEventService.Replay";
    const event = { params: { path: { id: "aut_5Xn2Bq8Rk4Lm7Pz1", event_id: "9d4a6c2e-5b8f-4e1d-a7c3-2f6b8e0d4a91" } } };
    const notKept = await api.POST("/api/v1/automations/{id}/webhook-events/{event_id}/replay", { ...event, body: {}, headers: { Prefer: "code=409, example=eventBodyNotKept" } });
    expect(notKept.response.status).toBe(409);
    expect(reasonOf(notKept.error)).toBe("EVENT_BODY_NOT_KEPT");
    expect(responseErrors(replay, 409, notKept.error)).toEqual([]);
    // @ts-expect-error the body has no fields
    const withField = await api.POST("/api/v1/automation_executions/{id}/redrive", { ...path, body: { force: true } });
    expect(withField.response.status).toBe(400);
    expect(withField.error?.message).toBe("body: must NOT have more than 0 properties");
    // BulkRedrive: the contract's shape is refused as the server refuses it (the range's rules are the server's alone).
    const bulkPath = { params: { path: { id: "aut_5Xn2Bq8Rk4Lm7Pz1" } } };
    // @ts-expect-error since is required
    const noSince = await api.POST("/api/v1/automations/{id}/executions/redrive", { ...bulkPath, body: { until: "2026-01-10T09:00:00Z" } });
    expect(noSince.response.status).toBe(400);
    expect(noSince.error?.message).toBe("body.since: must have required property 'since'");
    const draft = await api.POST("/api/v1/automations/{id}/executions/redrive", { ...bulkPath, body: { since: "2026-01-10T06:00:00Z", until: "2026-01-10T09:00:00Z" }, headers: { Prefer: "code=409, example=automationIsDraft" } });
    expect(reasonOf(draft.error)).toBe("AUTOMATION_IS_DRAFT");
  });

  it("a Prefer the contract does not document is 400 naming the Prefer header", async () => {
    const r = await api.GET("/api/v1/funds/app-caps/{app_id}", { ...appCap, headers: { Prefer: "code=409" } });
    expect(r.response.status).toBe(400);
    expect(reasonOf(r.error)).toBe("INVALID_ARGUMENT");
    expect(r.error?.message).toBe("headers.prefer: Requested status code 409 is not defined in the document.");
  });
});

describe("coverage", () => {
  it("every operation of the contract was called", () => {
    const missing = operations.map((o) => o.operationId).filter((id) => !called.has(id));
    expect(missing).toEqual([]);
  });
});

describe("npm run mock under a process manager", () => {
  it("SIGTERM to the npm process alone stops the mock and Prism behind it, the port closed", async () => {
    const other = await startMock();
    const port = Number(new URL(other.url).port);
    const stopped = await terminate(other.child);
    expect(stopped.tree.length, "the mock and Prism").toBeGreaterThanOrEqual(2);
    expect(stopped.left, `still running after npm exited:\n${other.output()}`).toEqual([]);
    expect(stopped).toMatchObject({ code: 0, signal: null });
    expect(await accepting(port)).toBe(false);
    expect(other.output()).toContain(`Mock of the tenant API listening on http://127.0.0.1:${port} (`);
  }, 90_000);

  it("a port another process holds: exit 2, naming --port and --host", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as AddressInfo;
    try {
      const run = await runToEnd("npm", ["run", "--silent", "mock", "--", "--port", String(port)], {}, { cwd: root, timeoutMs: 60_000 });
      expect(run.code, run.out).toBe(2);
      expect(run.stderr).toContain(`the mock cannot listen: --port ${port} is in use on --host "127.0.0.1" by another process (EADDRINUSE): stop that process, or set --port (or --host) to a free one`);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 90_000);
});
