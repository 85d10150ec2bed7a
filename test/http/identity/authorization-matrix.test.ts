// Who may call what: every operation of the contract called with no token, a forged token, an
// expired token and each role's token, the answer compared with the table below (kept here, apart
// from the server's own table in src/identity/roles.ts, so a change there that widens access fails
// here). Every request is one the caller would be granted (2xx) if allowed, so a 401 or 403 is the
// authorization speaking, not the input. Then: another user's rows can be neither read nor changed.
import { generateKeyPair, SignJWT, decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { operations, responseErrors } from "../../support/contract.js";
import { testDialect } from "../../support/database.js";
import { failedDestination } from "../../support/destinations.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { senderBody, senderHeaders, senderListeners, type SenderKind, type SenderListener } from "../../support/sender-deliveries.js";
import { DEFAULT_APP_ID, startTestServer, type TestServer } from "../../support/server.js";
import { amount, DAY, funds, money, newAppId, shown, type Funds } from "../limits/helpers.js";
import { spends } from "../spends/helpers.js";
import { automationsApi, createHooked, hmacHeaders, newEventId, sendHmac, unixTime, type Hooked } from "../webhooks/helpers.js";

type Caller = "none" | "forged" | "expired" | "ROLE_SUPER_ADMIN" | "ROLE_FUND_ADMIN" | "ROLE_USER" | "ROLE_APP_SERVICE";
type Expect = 200 | 400 | 401 | 403;
const CALLERS: readonly Caller[] = ["none", "forged", "expired", "ROLE_SUPER_ADMIN", "ROLE_FUND_ADMIN", "ROLE_USER", "ROLE_APP_SERVICE"];
const ROLES = ["ROLE_SUPER_ADMIN", "ROLE_FUND_ADMIN", "ROLE_USER", "ROLE_APP_SERVICE"] as const;

// Rows: none, forged, expired, super admin, fund admin, user, app service.
const SUPER: Expect[] = [401, 401, 401, 200, 403, 403, 403];
const FUNDS_ADMIN: Expect[] = [401, 401, 401, 200, 200, 403, 403];
// Users with a fund of their own; an app's backend is not one.
const SUBJECTS: Expect[] = [401, 401, 401, 200, 200, 200, 403];
const ANYONE: Expect[] = [401, 401, 401, 200, 200, 200, 200];
const SPENDERS: Expect[] = [401, 401, 401, 200, 200, 403, 200];
// The token endpoint takes client credentials in the form body only: any Authorization header is 400.
const TOKEN: Expect[] = [200, 400, 400, 400, 400, 400, 400];
// The intake authenticates by the sender's signature (or JWT); an access token is neither needed nor looked at.
const INTAKE: Expect[] = [200, 200, 200, 200, 200, 200, 200];

const TABLE: Record<string, Expect[]> = {
  "svc.api.iam.v1.TokenService.CreateToken": TOKEN,
  "svc.api.iam.v1.UserService.Create": SUPER,
  "svc.api.iam.v1.UserService.Get": FUNDS_ADMIN,
  "svc.api.iam.v1.UserService.List": FUNDS_ADMIN,
  "svc.api.iam.v1.CredentialService.Create": SUPER,
  "svc.api.iam.v1.CredentialService.List": SUPER,
  "svc.api.iam.v1.CredentialService.Revoke": SUPER,
  "svc.api.funds.v1.SubjectAppLimitService.Get": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.SetLimit": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.Suspend": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.Unsuspend": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.SetExtension": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.ClearExtension": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.Delete": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.GetEffective": FUNDS_ADMIN,
  "svc.api.funds.v1.SubjectAppLimitService.Search": FUNDS_ADMIN,
  "svc.api.funds.v1.AppCapService.Get": FUNDS_ADMIN,
  "svc.api.funds.v1.AppCapService.Set": FUNDS_ADMIN,
  "svc.api.funds.v1.AppCapService.Delete": FUNDS_ADMIN,
  "svc.api.funds.v1.AppCapService.List": FUNDS_ADMIN,
  "svc.api.funds.v1.FundPolicyService.Get": ANYONE,
  "svc.api.funds.v1.FundPolicyService.Update": FUNDS_ADMIN,
  "svc.api.funds.v1.MyFundLimitsService.SetLimit": SUBJECTS,
  "svc.api.funds.v1.MyFundLimitsService.Get": SUBJECTS,
  "svc.api.funds.v1.MyFundLimitsService.List": SUBJECTS,
  "svc.api.funds.v1.MyFundLimitsService.ClearLimit": SUBJECTS,
  "svc.api.funds.v1.MyFundLimitsService.GetEffective": SUBJECTS,
  // Administrators and app services (a request for one of its bound apps) act on spends; a user
  // reads their own (the request names the caller's own authorization).
  "svc.api.funds.v1.SpendService.Authorize": SPENDERS,
  "svc.api.funds.v1.SpendService.Simulate": SPENDERS,
  "svc.api.funds.v1.SpendService.Capture": SPENDERS,
  "svc.api.funds.v1.SpendService.Release": SPENDERS,
  "svc.api.funds.v1.SpendService.Reverse": SPENDERS,
  "svc.api.funds.v1.SpendService.Get": ANYONE,
  "svc.api.funds.v1.SpendService.List": ANYONE,
  "svc.api.automations.v1.AutomationService.CreateAutomation": SUPER,
  "svc.api.automations.v1.AutomationService.CheckAutomationSteps": SUPER,
  "svc.api.automations.v1.AutomationService.GetAutomation": SUPER,
  "svc.api.automations.v1.AutomationService.GetNotificationPublicKey": SUPER,
  "svc.api.automations.v1.AutomationService.UpdateAutomation": SUPER,
  "svc.api.automations.v1.AutomationService.DeleteAutomation": SUPER,
  "svc.api.automations.v1.AutomationService.ListAutomations": SUPER,
  "svc.api.automations.v1.AutomationService.RotateWebhookSecret": SUPER,
  "svc.api.automations.v1.AutomationService.RotateNotificationSecret": SUPER,
  "svc.api.automations.v1.AutomationExecutionService.ListAutomationExecutions": SUPER,
  "svc.api.automations.v1.AutomationExecutionService.GetAutomationExecution": SUPER,
  "svc.api.automations.v1.AutomationExecutionService.Redrive": SUPER,
  "svc.api.automations.v1.AutomationExecutionService.BulkRedrive": SUPER,
  "svc.api.automations.v1.WebhookEventService.ListWebhookEvents": SUPER,
  "svc.api.automations.v1.WebhookEventService.Replay": SUPER,
  "svc.api.automations.v1.NotificationDestinationService.List": SUPER,
  "svc.api.automations.v1.NotificationDestinationService.Get": SUPER,
  "svc.api.automations.v1.NotificationDestinationService.Enable": SUPER,
  "svc.api.automations.v1.NotificationDestinationService.Disable": SUPER,
  "svc.api.webhooks.v1.IncomingWebhookService.Receive": INTAKE,
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStandardWebhook": INTAKE,
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveGithubWebhook": INTAKE,
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStripeWebhook": INTAKE,
  "svc.api.audit.v1.AuditService.List": SUBJECTS,
  "svc.api.sandbox.v1.SandboxClockService.Get": SUPER,
  "svc.api.sandbox.v1.SandboxClockService.Advance": SUPER,
};

interface Call {
  path?: Record<string, string>;
  query?: Record<string, string>;
  /** JSON, or a form for the token endpoint. */
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** The raw body sent instead of `body` (the intake signs its bytes). */
  raw?: string;
}

interface Me {
  userId: string;
  f: Funds;
  clientId: string;
  clientSecret: string;
}

const counts = reliabilitySuite("authorization-matrix", testDialect());
let ts: TestServer;
let admin: Funds;
let subject: string;
let hook: Hooked;
let senders: Record<SenderKind, SenderListener>;
let executionId: string;
const me = new Map<Caller, Me>();
const bearer = new Map<Caller, string | undefined>();

async function accessToken(clientId: string, clientSecret: string): Promise<string> {
  const r = await fetch(`${ts.url}/auth/v1/token`, { method: "POST", body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret }) });
  expect(r.status).toBe(200);
  return ((await r.json()) as { access_token: string }).access_token;
}

/** A token shaped exactly like a real one (same header, claims and kid) but signed by another key. */
async function forge(real: string): Promise<string> {
  const { privateKey } = await generateKeyPair("ES256");
  return new SignJWT(decodeJwt(real)).setProtectedHeader(decodeProtectedHeader(real) as { alg: string }).sign(privateKey);
}

beforeAll(async () => {
  // The sandbox, so that its own operations are bound (elsewhere they are 404 SANDBOX_ONLY to anyone).
  ts = await startTestServer({}, undefined, { sandbox: true });
  admin = funds(ts.admin);
  subject = (await ts.userClient(["ROLE_USER"], "Subject")).userId;
  // Taken before the clock moves past its lifetime (900 s), so it is expired for the rest of the file.
  const expiring = await ts.userClient(["ROLE_SUPER_ADMIN"], "Expiring");
  const expired = await accessToken(expiring.clientId, expiring.clientSecret);
  ts.clock.advance(901_000);
  bearer.set("none", undefined);
  bearer.set("expired", expired);
  for (const role of ROLES) {
    const user = await ts.userClient([role], role);
    me.set(role, { userId: user.userId, f: funds(user.client), clientId: user.clientId, clientSecret: user.clientSecret });
    bearer.set(role, await accessToken(user.clientId, user.clientSecret));
  }
  bearer.set("forged", await forge(bearer.get("ROLE_SUPER_ADMIN")!));
  hook = await createHooked(ts);
  senders = await senderListeners(ts);
  const event = await sendHmac(ts, hook.url, hook.secret);
  executionId = event.body.webhookEvent.automationExecutionId;
});
afterAll(async () => ts?.stop());

const inFuture = () => new Date(ts.clock.now() + DAY).toISOString();

/** A row of `userId` for a fresh app, with the given controls set by the admin. */
async function row(userId: string, controls: { suspend?: boolean; extension?: boolean } = {}): Promise<string> {
  const app = newAppId("authz");
  unwrap(await admin.setLimit(userId, app, { limit: amount("10") }));
  if (controls.suspend) unwrap(await admin.suspend(userId, app, { reason: "authz" }));
  if (controls.extension) unwrap(await admin.setExtension(userId, app, { limit: amount("20"), expiresAt: inFuture(), reason: "authz" }));
  return app;
}

/** The caller's own row (the My* operations act on it); for callers without a user or a fund of their own, the subject's. */
async function ownRow(caller: Caller): Promise<string> {
  const mine = me.get(caller);
  if (!mine || caller === "ROLE_APP_SERVICE") return row(subject);
  const app = newAppId("mine");
  unwrap(await mine.f.mySetLimit(app, { limit: amount("5") }));
  return app;
}

async function freshCredential(): Promise<{ user_id: string; credential_id: string }> {
  const { credential } = unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: subject } }, body: {} }));
  return { user_id: subject, credential_id: credential.id! };
}

/** The app of a spend `caller` may act on: an app service's bound app, else a fresh one with a limit for `userId`. */
async function spendApp(caller: Caller, userId: string): Promise<string> {
  const app = caller === "ROLE_APP_SERVICE" ? DEFAULT_APP_ID : newAppId("spend");
  unwrap(await admin.setLimit(userId, app, { limit: amount("1000000") }));
  return app;
}

/** An authorization of `userId` (pending, or captured) that `caller` may see, made by the admin. */
async function spendOf(caller: Caller, userId: string, capture = false): Promise<string> {
  const app = await spendApp(caller, userId);
  return unwrap(await spends(ts.admin).authorize({ userId, appId: app, amount: money("1"), ...(capture ? { capture: true } : {}) })).authorization.id;
}

/** A failed execution of an automation of its own (its one step reads a field no payload has). */
async function failedExecution(): Promise<string> {
  const failing = await createHooked(ts, { steps: [{ stepName: "fail", evaluateExpressions: { expressions: [{ name: "v", expression: "ctx.trigger.missing.deeper" }] } }] });
  const event = await sendHmac(ts, failing.url, failing.secret);
  await ts.server.worker.idle();
  return event.body.webhookEvent.automationExecutionId;
}

/** A failed destination of its own. */
const destination = () => failedDestination(ts.databaseUrl, `${newAppId()}.example.com:443`, new Date(ts.clock.now()).toISOString());

const automationBody = () => ({ automation: { displayName: `authz ${newEventId()}`, isDraft: true, enabled: false, triggers: [{ webhook: { hmac: {} } }], automationSteps: [] } });

/** A request each allowed caller would be granted: fixtures are made afresh where the call consumes them. */
const REQUESTS: Record<string, (caller: Caller) => Promise<Call>> = {
  "svc.api.iam.v1.TokenService.CreateToken": async () => ({ form: { grant_type: "client_credentials", client_id: "bootstrap-admin", client_secret: "bootstrap-secret-for-tests-only" } }),
  "svc.api.iam.v1.UserService.Create": async () => ({ body: { displayName: "Matrix", email: `matrix-${newEventId()}@example.com`, roles: ["ROLE_USER"] } }),
  "svc.api.iam.v1.UserService.Get": async () => ({ path: { user_id: subject } }),
  "svc.api.iam.v1.UserService.List": async () => ({}),
  "svc.api.iam.v1.CredentialService.Create": async () => ({ path: { user_id: subject }, body: {} }),
  "svc.api.iam.v1.CredentialService.List": async () => ({ path: { user_id: subject } }),
  "svc.api.iam.v1.CredentialService.Revoke": async () => ({ path: await freshCredential(), body: {} }),
  "svc.api.funds.v1.SubjectAppLimitService.Get": async () => ({ path: { user_id: subject, app_id: await row(subject) } }),
  "svc.api.funds.v1.SubjectAppLimitService.SetLimit": async () => ({ path: { user_id: subject, app_id: newAppId() }, body: { limit: amount("7") } }),
  "svc.api.funds.v1.SubjectAppLimitService.Suspend": async () => ({ path: { user_id: subject, app_id: await row(subject) }, body: { reason: "matrix" } }),
  "svc.api.funds.v1.SubjectAppLimitService.Unsuspend": async () => ({ path: { user_id: subject, app_id: await row(subject, { suspend: true }) } }),
  "svc.api.funds.v1.SubjectAppLimitService.SetExtension": async () => ({ path: { user_id: subject, app_id: await row(subject) }, body: { limit: amount("30"), expiresAt: inFuture(), reason: "matrix" } }),
  "svc.api.funds.v1.SubjectAppLimitService.ClearExtension": async () => ({ path: { user_id: subject, app_id: await row(subject, { extension: true }) } }),
  "svc.api.funds.v1.SubjectAppLimitService.Delete": async () => ({ path: { user_id: subject, app_id: await row(subject) } }),
  "svc.api.funds.v1.SubjectAppLimitService.GetEffective": async () => ({ path: { user_id: subject, app_id: await row(subject) } }),
  "svc.api.funds.v1.SubjectAppLimitService.Search": async () => ({ body: { userIds: [subject] } }),
  "svc.api.funds.v1.AppCapService.Get": async () => {
    const app = newAppId("cap");
    unwrap(await admin.capSet(app, { controls: { limit: amount("100") } }));
    return { path: { app_id: app } };
  },
  "svc.api.funds.v1.AppCapService.Set": async () => ({ path: { app_id: newAppId("cap") }, body: { controls: { limit: amount("100") } } }),
  "svc.api.funds.v1.AppCapService.Delete": async () => {
    const app = newAppId("cap");
    unwrap(await admin.capSet(app, { controls: { limit: amount("100") } }));
    return { path: { app_id: app } };
  },
  "svc.api.funds.v1.AppCapService.List": async () => ({}),
  "svc.api.funds.v1.FundPolicyService.Get": async () => ({}),
  "svc.api.funds.v1.FundPolicyService.Update": async () => ({ body: { fundPolicy: { currencyCode: "USD", defaultControls: null }, updateMask: "currencyCode" } }),
  "svc.api.funds.v1.MyFundLimitsService.SetLimit": async () => ({ path: { app_id: newAppId("mine") }, body: { limit: amount("3") } }),
  "svc.api.funds.v1.MyFundLimitsService.Get": async (caller) => ({ path: { app_id: await ownRow(caller) } }),
  "svc.api.funds.v1.MyFundLimitsService.List": async () => ({}),
  "svc.api.funds.v1.MyFundLimitsService.ClearLimit": async (caller) => ({ path: { app_id: await ownRow(caller) } }),
  "svc.api.funds.v1.MyFundLimitsService.GetEffective": async (caller) => ({ path: { app_id: await ownRow(caller) } }),
  "svc.api.funds.v1.SpendService.Authorize": async (caller) => ({ headers: { "Idempotency-Key": newEventId() }, body: { userId: subject, appId: await spendApp(caller, subject), amount: money("1") } }),
  "svc.api.funds.v1.SpendService.Simulate": async (caller) => ({ body: { userId: subject, appId: await spendApp(caller, subject), amount: money("1") } }),
  "svc.api.funds.v1.SpendService.Capture": async (caller) => ({ path: { authorization_id: await spendOf(caller, subject) }, body: {} }),
  "svc.api.funds.v1.SpendService.Release": async (caller) => ({ path: { authorization_id: await spendOf(caller, subject) }, body: {} }),
  "svc.api.funds.v1.SpendService.Reverse": async (caller) => ({ path: { authorization_id: await spendOf(caller, subject, true) }, body: {} }),
  "svc.api.funds.v1.SpendService.Get": async (caller) => ({ path: { authorization_id: await spendOf(caller, caller === "ROLE_USER" ? me.get(caller)!.userId : subject) } }),
  "svc.api.funds.v1.SpendService.List": async () => ({}),
  "svc.api.automations.v1.AutomationService.CreateAutomation": async () => ({ body: automationBody() }),
  "svc.api.automations.v1.AutomationService.CheckAutomationSteps": async () => ({ body: { automationSteps: [] } }),
  "svc.api.automations.v1.AutomationService.GetAutomation": async () => ({ path: { id: hook.id } }),
  "svc.api.automations.v1.AutomationService.UpdateAutomation": async () => ({ path: { id: hook.id }, body: { automation: { displayName: `renamed ${newEventId()}` }, updateMask: "displayName" } }),
  "svc.api.automations.v1.AutomationService.DeleteAutomation": async () => ({ path: { id: unwrap(await automationsApi(ts.admin).create(automationBody().automation)).automation.id! } }),
  "svc.api.automations.v1.AutomationService.ListAutomations": async () => ({}),
  "svc.api.automations.v1.AutomationService.RotateWebhookSecret": async () => {
    const created = await createHooked(ts);
    return { path: { id: created.id }, body: {} };
  },
  "svc.api.automations.v1.AutomationService.RotateNotificationSecret": async () => ({ path: { id: hook.id }, body: {} }),
  "svc.api.automations.v1.AutomationService.GetNotificationPublicKey": async () => {
    const created = await createHooked(ts);
    const tell = { stepName: "tell", notify: { url: "https://hooks.example.com/limits", bodyCel: "{}", signatureScheme: "NOTIFY_SIGNATURE_SCHEME_ED25519" } };
    unwrap(await automationsApi(ts.admin).update(created.id, { displayName: "signs with Ed25519", automationSteps: [tell] }, "automationSteps"));
    return { path: { id: created.id } };
  },
  "svc.api.automations.v1.AutomationExecutionService.ListAutomationExecutions": async () => ({ query: { automation_id: hook.id } }),
  "svc.api.automations.v1.AutomationExecutionService.GetAutomationExecution": async () => ({ path: { id: executionId } }),
  "svc.api.automations.v1.AutomationExecutionService.Redrive": async () => ({ path: { id: await failedExecution() }, body: {} }),
  "svc.api.automations.v1.AutomationExecutionService.BulkRedrive": async () => ({
    path: { id: hook.id },
    body: { since: "2026-01-01T00:00:00Z", until: new Date(ts.clock.now()).toISOString() },
  }),
  "svc.api.automations.v1.WebhookEventService.ListWebhookEvents": async () => ({ path: { id: hook.id } }),
  "svc.api.automations.v1.WebhookEventService.Replay": async () => {
    // An event of its own: one replay of an event runs at a time.
    const event = await sendHmac(ts, hook.url, hook.secret);
    await ts.server.worker.idle();
    return { path: { id: hook.id, event_id: event.body.webhookEvent.eventId }, body: {} };
  },
  "svc.api.automations.v1.NotificationDestinationService.List": async () => ({}),
  "svc.api.automations.v1.NotificationDestinationService.Get": async () => ({ path: { destination_id: await destination() } }),
  "svc.api.automations.v1.NotificationDestinationService.Enable": async () => ({ path: { destination_id: await destination() }, body: {} }),
  "svc.api.automations.v1.NotificationDestinationService.Disable": async () => ({ path: { destination_id: await destination() }, body: {} }),
  "svc.api.audit.v1.AuditService.List": async () => ({}),
  "svc.api.sandbox.v1.SandboxClockService.Get": async () => ({}),
  // A second at a time: the intake's deliveries are signed with the test's clock, within their window.
  "svc.api.sandbox.v1.SandboxClockService.Advance": async () => ({ body: { duration: "1s" } }),
  "svc.api.webhooks.v1.IncomingWebhookService.Receive": async () => {
    const raw = '{"matrix":true}';
    return { path: { listener_id: hook.listenerId }, raw, headers: hmacHeaders(hook.secret, raw, unixTime(ts), newEventId()) };
  },
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStandardWebhook": () => senderCall("standardWebhooks"),
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveGithubWebhook": () => senderCall("github"),
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStripeWebhook": () => senderCall("stripe"),
};

/** A delivery of a new event from `kind`'s sender to its listener, signed by the sender's library. */
async function senderCall(kind: SenderKind): Promise<Call> {
  const id = `evt_${newEventId().replaceAll("-", "")}`;
  const raw = senderBody(kind, id);
  return { path: { listener_id: senders[kind].listenerId }, raw, headers: await senderHeaders(kind, senders[kind].secret, raw, { id, timestamp: unixTime(ts) }) };
}

async function send(operationId: string, caller: Caller): Promise<{ status: number; body: unknown }> {
  const op = operations.find((o) => o.operationId === operationId)!;
  const call = await REQUESTS[operationId]!(caller);
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(call.path?.[name] ?? ""));
  const query = call.query ? `?${new URLSearchParams(call.query).toString()}` : "";
  const headers: Record<string, string> = { ...call.headers };
  const token = bearer.get(caller);
  if (token) headers.Authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (call.form) {
    headers["Content-Type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(call.form).toString();
  } else if (call.raw !== undefined) {
    body = call.raw;
  } else if (call.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(call.body);
  }
  const r = await fetch(`${ts.url}${path}${query}`, { method: op.method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) });
  const text = await r.text();
  const parsed: unknown = text ? JSON.parse(text) : undefined;
  expect(responseErrors(operationId, r.status, parsed), `${operationId} as ${caller}: ${r.status} ${text.slice(0, 200)}`).toEqual([]);
  return { status: r.status, body: parsed };
}

describe("the authorization table", () => {
  it("names every operation of the contract, and nothing else", () => {
    expect(Object.keys(TABLE).sort()).toEqual(operations.map((o) => o.operationId).sort());
    expect(Object.keys(REQUESTS).sort()).toEqual(operations.map((o) => o.operationId).sort());
  });

  for (const { operationId } of operations) {
    it(`${operationId.replace(/^svc\.api\./, "")}: every caller gets the answer of the table`, async () => {
      const expected = TABLE[operationId];
      expect(expected, `${operationId} is missing from the table`).toBeDefined();
      for (const [i, caller] of CALLERS.entries()) {
        await counts.check(async () => {
          const { status } = await send(operationId, caller);
          const want = expected![i]!;
          expect(want === 200 ? status >= 200 && status < 300 : status === want, `${operationId} as ${caller}: expected ${want}, got ${status}`).toBe(true);
        });
      }
    });
  }
});

describe("another user's rows", () => {
  it("can be neither read nor changed through the caller's own operations, nor through the administrators'", async () => {
    const alice = me.get("ROLE_USER")!;
    const bob = await ts.userClient(["ROLE_USER"], "Bob");
    const bf = funds(bob.client);
    const app = newAppId("alice");
    unwrap(await alice.f.mySetLimit(app, { limit: amount("42"), period: "PERIOD_KIND_WEEKLY" }));
    unwrap(await admin.suspend(alice.userId, app, { reason: "held" }));
    const before = unwrap(await admin.get(alice.userId, app)).limit;
    const aliceSpend = await spendOf("ROLE_USER", alice.userId);
    const bs = spends(bob.client);
    const attempts: [string, () => Promise<{ response: Response }>, number[]][] = [
      ["MyGet", () => bf.myGet(app), [404]],
      ["MyEffective", () => bf.myEffective(app), [200]],
      ["MyClearLimit", () => bf.myClearLimit(app), [404]],
      ["MySetLimit", () => bf.mySetLimit(app, { limit: amount("1") }), [200]],
      ["Get", () => bf.get(alice.userId, app), [403]],
      ["SetLimit", () => bf.setLimit(alice.userId, app, { limit: amount("1") }), [403]],
      ["Suspend", () => bf.suspend(alice.userId, app, {}), [403]],
      ["Unsuspend", () => bf.unsuspend(alice.userId, app), [403]],
      ["SetExtension", () => bf.setExtension(alice.userId, app, { limit: amount("1"), expiresAt: inFuture() }), [403]],
      ["ClearExtension", () => bf.clearExtension(alice.userId, app), [403]],
      ["Delete", () => bf.delete(alice.userId, app), [403]],
      ["GetEffective", () => bf.effective(alice.userId, app), [403]],
      ["Search", () => bf.search({ userIds: [alice.userId] }), [403]],
      ["SpendGet", () => bs.get(aliceSpend), [404]],
      ["SpendList", () => bs.list({ user_id: alice.userId }), [403]],
      ["SpendRelease", () => bs.release(aliceSpend), [403]],
    ];
    for (const [name, attempt, statuses] of attempts) {
      await counts.check(async () => {
        const { response } = await attempt();
        expect(statuses, `${name} answered ${response.status}`).toContain(response.status);
      });
    }
    // Bob's SetLimit made Bob's own row; Alice's, and what Bob can list, are as they were.
    expect(unwrap(await admin.get(alice.userId, app)).limit).toEqual(before);
    expect(unwrap(await spends(ts.admin).get(aliceSpend)).authorization.state).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
    expect(unwrap(await bf.myList()).list.map((l) => l.limit.appId)).toEqual([app]);
    expect(unwrap(await bf.myGet(app)).limit.controls).toEqual(shown({ limit: amount("1") }));
    expect(unwrap(await bf.myEffective(app)).effective).not.toEqual(unwrap(await admin.effective(alice.userId, app)).effective);
  });
});
