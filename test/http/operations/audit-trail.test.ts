// The audit trail through HTTP: every operation the contract marks as changing a target records one
// event, in the change's transaction, whose before and after are what a read just before and just
// after answers; who made it (a caller, or an automation's execution); who may read what; filters,
// pages and bad input. The list of operations is the contract's: an operation that changes state
// without an `x-audit` decision, or audited without a case here, fails this file.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { paths } from "../../../generated/api.js";
import type { KnownAuditTargetKind } from "../../../generated/enums.js";
import { paginate, unwrap, type ApiClient } from "../../../src/client/index.js";
import { sql } from "kysely";
import { moveAuditInbox } from "../../../src/audit/audit-inbox.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage, type Storage } from "../../../src/storage/connect.js";
import { contract, operations } from "../../support/contract.js";
import { failedDestination } from "../../support/destinations.js";
import { withDatabase } from "../../support/old-database.js";
import { startTestServer, type TestServer, type TestUser } from "../../support/server.js";
import { amount, expectError, funds, iso, money, newAppId, type Schemas } from "../limits/helpers.js";
import { automationsApi, createHooked, newEventId, sendHmac, expectAccepted } from "../webhooks/helpers.js";

type AuditEvent = Schemas["AuditEvent"];
type Target = Schemas["AuditTarget"];
type Query = NonNullable<paths["/api/v1/audit-events"]["get"]["parameters"]["query"]>;

let ts: TestServer;
let root: TestUser;
let rootCredentialId: string;
beforeAll(async () => {
  // The sandbox, so that SandboxClockService.Advance is bound: every other operation is as elsewhere.
  ts = await startTestServer({}, undefined, { sandbox: true });
  root = await ts.userClient(["ROLE_SUPER_ADMIN"], "Auditor root");
  rootCredentialId = (await credentialsOf(root.userId))[0]!.id!;
});
afterAll(async () => ts?.stop());

/** Runs `use` on a storage of its own opened on `server`'s database, as another process of the release would. */
async function withStorage<T>(server: TestServer, use: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(loadConfig({ DATABASE_URL: server.databaseUrl }).database);
  try {
    return await use(storage);
  } finally {
    await storage.close();
  }
}

const list = (client: ApiClient, query: Query = {}) => client.GET("/api/v1/audit-events", { params: { query } });

async function allEvents(client: ApiClient, query: Query = {}): Promise<AuditEvent[]> {
  const out: AuditEvent[] = [];
  for await (const item of paginate((page_token) => list(client, { ...query, page_token }).then(unwrap))) out.push(item.auditEvent);
  return out;
}

async function credentialsOf(userId: string): Promise<Schemas["Credential"][]> {
  const answer = unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId } } }));
  return answer.list.map((c) => c.credential);
}

const limitTarget = (userId: string, appId: string): Target => ({ kind: "AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT", id: `${userId}/${appId}`, userId, appId });
const orNull = <T>(answer: { data?: T; response: Response }, pick: (data: T) => unknown): unknown => {
  if (answer.response.status === 404) return null;
  return pick(unwrap(answer));
};

/** How each target is read through the API: the state an audit event's before and after must equal. */
const READ: Record<Exclude<KnownAuditTargetKind, "AUDIT_TARGET_KIND_UNSPECIFIED">, (t: Target) => Promise<unknown>> = {
  AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT: async (t) => orNull(await funds(root.client).get(t.userId, t.appId), (d) => (d as { limit: unknown }).limit),
  AUDIT_TARGET_KIND_APP_CAP: async (t) => orNull(await funds(root.client).capGet(t.appId), (d) => (d as { appCap: unknown }).appCap),
  AUDIT_TARGET_KIND_FUND_POLICY: async () => unwrap(await root.client.GET("/api/v1/funds/policy")).fundPolicy,
  AUDIT_TARGET_KIND_USER: async (t) => orNull(await root.client.GET("/api/v1/users/{user_id}", { params: { path: { user_id: t.id } } }), (d) => d.user),
  AUDIT_TARGET_KIND_CREDENTIAL: async (t) => (await credentialsOf(t.userId)).find((c) => c.id === t.id) ?? null,
  AUDIT_TARGET_KIND_AUTOMATION: async (t) => orNull(await automationsApi(root.client).get(t.id), (d) => (d as { automation: unknown }).automation),
  // A secret is never read back nor recorded: its rotation is recorded as such.
  AUDIT_TARGET_KIND_WEBHOOK_SECRET: async () => null,
  AUDIT_TARGET_KIND_NOTIFICATION_SECRET: async () => null,
  AUDIT_TARGET_KIND_AUTOMATION_EXECUTION: async (t) => orNull(await automationsApi(root.client).execution(t.id), (d) => (d as { automationExecution: unknown }).automationExecution),
  AUDIT_TARGET_KIND_SANDBOX_CLOCK: async () => unwrap(await root.client.GET("/api/v1/sandbox/clock")).sandboxClock,
  AUDIT_TARGET_KIND_NOTIFICATION_DESTINATION: async (t) =>
    orNull(await root.client.GET("/api/v1/notification-destinations/{destination_id}", { params: { path: { destination_id: t.id } } }), (d) => d.notificationDestination),
};

interface Made {
  answer: { response: Response; data?: unknown; error?: unknown };
  target: Target;
}

interface Case {
  /** Makes what the change needs and answers its target, when the target exists before the change. */
  prepare?: () => Promise<Target>;
  act: (target: Target | undefined) => Promise<Made>;
  /** The state recorded after, when it is not what a read answers: a rotated secret; a new execution, which runs on at once (as the answer showed it). */
  after?: (made: Made) => unknown;
}

/** A published automation whose step fails on the event it was sent, fixed since; and that event. */
async function fixedAfterFailing(): Promise<{ hook: Awaited<ReturnType<typeof createHooked>>; eventId: string; executionId: string }> {
  const hook = await createHooked(ts, { steps: [{ stepName: "read", evaluateExpressions: { expressions: [{ name: "v", expression: "ctx.trigger.missing.deeper" }] } }] });
  const accepted = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ present: 1 })));
  await ts.server.worker.idle();
  unwrap(await automationsApi(root.client).update(hook.id, { displayName: "Fixed", automationSteps: [{ stepName: "read", evaluateExpressions: { expressions: [{ name: "v", expression: "ctx.trigger.present" }] } }] }, "automationSteps"));
  return { hook, eventId: accepted.eventId, executionId: accepted.automationExecutionId! };
}
const newExecution = (answer: Made["answer"]): Target => ({ kind: "AUDIT_TARGET_KIND_AUTOMATION_EXECUTION", id: (answer.data as { automationExecution: { id: string } }).automationExecution.id, userId: "", appId: "" });
const answered = ({ answer }: Made) => (answer.data as { automationExecution: unknown }).automationExecution;

/** A destination that failed, `disabled` or not. */
async function failedOne(disabled: boolean): Promise<Target> {
  const id = await failedDestination(ts.databaseUrl, `${newAppId()}.example.com:443`, iso(ts.clock.now()), disabled);
  return { kind: "AUDIT_TARGET_KIND_NOTIFICATION_DESTINATION", id, userId: "", appId: "" };
}
const onDestination = (action: "enable" | "disable") =>
  onRow((t) => root.client.POST(`/api/v1/notification-destinations/{destination_id}/${action}`, { params: { path: { destination_id: t.id } }, body: {} }));

const f = () => funds(root.client);
const userRow = async (): Promise<Target> => limitTarget((await ts.userClient(["ROLE_USER"])).userId, newAppId());
const limitedRow = async (): Promise<Target> => {
  const t = await userRow();
  unwrap(await f().setLimit(t.userId, t.appId, { limit: amount("100"), period: "PERIOD_KIND_MONTHLY" }));
  return t;
};
const onRow = (call: (t: Target) => Promise<Made["answer"]>) => async (t: Target | undefined) => ({ answer: await call(t!), target: t! });
const hooked = async (): Promise<Target> => ({ kind: "AUDIT_TARGET_KIND_AUTOMATION", id: (await createHooked(ts)).id, userId: "", appId: "" });

/** A subject with a client of their own, for MyFundLimitsService: the caller is then that subject. */
let mine: TestUser;

const CASES: Record<string, Case> = {
  "svc.api.iam.v1.UserService.Create": {
    act: async () => {
      const answer = await root.client.POST("/api/v1/users", { body: { displayName: "Audited", email: `audited-${newEventId()}@example.com`, roles: ["ROLE_USER"] } });
      const id = unwrap(answer).user.id!;
      return { answer, target: { kind: "AUDIT_TARGET_KIND_USER", id, userId: id, appId: "" } };
    },
  },
  "svc.api.iam.v1.CredentialService.Create": {
    act: async () => {
      const userId = (await ts.userClient(["ROLE_USER"])).userId;
      const answer = await root.client.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId } }, body: {} });
      return { answer, target: { kind: "AUDIT_TARGET_KIND_CREDENTIAL", id: unwrap(answer).credential.id!, userId, appId: "" } };
    },
  },
  "svc.api.iam.v1.CredentialService.Revoke": {
    prepare: async () => {
      const userId = (await ts.userClient(["ROLE_USER"])).userId;
      return { kind: "AUDIT_TARGET_KIND_CREDENTIAL", id: (await credentialsOf(userId))[0]!.id!, userId, appId: "" };
    },
    act: onRow((t) => root.client.POST("/api/v1/users/{user_id}/credentials/{credential_id}/revoke", { params: { path: { user_id: t.userId, credential_id: t.id } }, body: {} })),
  },
  "svc.api.funds.v1.SubjectAppLimitService.SetLimit": { prepare: userRow, act: onRow((t) => f().setLimit(t.userId, t.appId, { limit: amount("250"), period: "PERIOD_KIND_MONTHLY" })) },
  "svc.api.funds.v1.SubjectAppLimitService.Suspend": { prepare: limitedRow, act: onRow((t) => f().suspend(t.userId, t.appId, { reason: "card lost" })) },
  "svc.api.funds.v1.SubjectAppLimitService.Unsuspend": {
    prepare: async () => {
      const t = await limitedRow();
      unwrap(await f().suspend(t.userId, t.appId, { reason: "card lost" }));
      return t;
    },
    act: onRow((t) => f().unsuspend(t.userId, t.appId)),
  },
  "svc.api.funds.v1.SubjectAppLimitService.SetExtension": {
    prepare: limitedRow,
    act: onRow((t) => f().setExtension(t.userId, t.appId, { limit: amount("150"), expiresAt: iso(ts.clock.now() + 86_400_000), reason: "conference" })),
  },
  "svc.api.funds.v1.SubjectAppLimitService.ClearExtension": {
    prepare: async () => {
      const t = await limitedRow();
      unwrap(await f().setExtension(t.userId, t.appId, { limit: amount("150"), expiresAt: iso(ts.clock.now() + 86_400_000) }));
      return t;
    },
    act: onRow((t) => f().clearExtension(t.userId, t.appId)),
  },
  "svc.api.funds.v1.SubjectAppLimitService.Delete": { prepare: limitedRow, act: onRow((t) => f().delete(t.userId, t.appId)) },
  "svc.api.funds.v1.MyFundLimitsService.SetLimit": {
    prepare: async () => limitTarget(mine.userId, newAppId("mine")),
    act: onRow((t) => funds(mine.client).mySetLimit(t.appId, { limit: amount("40"), period: "PERIOD_KIND_WEEKLY" })),
  },
  "svc.api.funds.v1.MyFundLimitsService.ClearLimit": {
    prepare: async () => {
      const t = limitTarget(mine.userId, newAppId("mine"));
      unwrap(await funds(mine.client).mySetLimit(t.appId, { limit: amount("40"), period: "PERIOD_KIND_WEEKLY" }));
      return t;
    },
    act: onRow((t) => funds(mine.client).myClearLimit(t.appId)),
  },
  "svc.api.funds.v1.AppCapService.Set": {
    prepare: async () => {
      const appId = newAppId("cap");
      return { kind: "AUDIT_TARGET_KIND_APP_CAP", id: appId, userId: "", appId };
    },
    act: onRow((t) => f().capSet(t.appId, { controls: { limit: amount("500"), period: "PERIOD_KIND_MONTHLY" } })),
  },
  "svc.api.funds.v1.AppCapService.Delete": {
    prepare: async () => {
      const appId = newAppId("cap");
      unwrap(await f().capSet(appId, { controls: { limit: amount("500"), period: "PERIOD_KIND_MONTHLY" } }));
      return { kind: "AUDIT_TARGET_KIND_APP_CAP", id: appId, userId: "", appId };
    },
    act: onRow((t) => f().capDelete(t.appId)),
  },
  "svc.api.funds.v1.FundPolicyService.Update": {
    prepare: async () => ({ kind: "AUDIT_TARGET_KIND_FUND_POLICY", id: "fund-policy", userId: "", appId: "" }),
    act: onRow(() => f().policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: { limit: amount(String(1000 + Math.floor(Math.random() * 1000))), period: "PERIOD_KIND_MONTHLY" } }, updateMask: "defaultControls" })),
  },
  "svc.api.automations.v1.AutomationService.CreateAutomation": {
    act: async () => {
      const answer = await automationsApi(root.client).create({ displayName: "Audited automation", isDraft: true, enabled: false, triggers: [{ webhook: { hmac: {} } }], automationSteps: [] });
      return { answer, target: { kind: "AUDIT_TARGET_KIND_AUTOMATION", id: (unwrap(answer) as { automation: { id: string } }).automation.id, userId: "", appId: "" } };
    },
  },
  "svc.api.automations.v1.AutomationService.UpdateAutomation": { prepare: hooked, act: onRow((t) => automationsApi(root.client).update(t.id, { displayName: "Renamed" }, "displayName")) },
  "svc.api.automations.v1.AutomationService.DeleteAutomation": { prepare: hooked, act: onRow((t) => automationsApi(root.client).delete(t.id)) },
  "svc.api.automations.v1.AutomationService.RotateWebhookSecret": {
    prepare: async () => ({ ...(await hooked()), kind: "AUDIT_TARGET_KIND_WEBHOOK_SECRET" }),
    act: onRow((t) => automationsApi(root.client).rotate(t.id)),
    after: () => ({ rotated: true }),
  },
  "svc.api.automations.v1.AutomationService.RotateNotificationSecret": {
    prepare: async () => ({ ...(await hooked()), kind: "AUDIT_TARGET_KIND_NOTIFICATION_SECRET" }),
    act: onRow((t) => root.client.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: t.id } }, body: {} })),
    after: () => ({ rotated: true }),
  },
  "svc.api.automations.v1.AutomationExecutionService.Redrive": {
    act: async () => {
      const { executionId } = await fixedAfterFailing();
      const answer = await root.client.POST("/api/v1/automation_executions/{id}/redrive", { params: { path: { id: executionId } }, body: {} });
      return { answer, target: newExecution(answer) };
    },
    after: answered,
  },
  "svc.api.automations.v1.NotificationDestinationService.Enable": { prepare: () => failedOne(true), act: onDestination("enable") },
  "svc.api.automations.v1.NotificationDestinationService.Disable": { prepare: () => failedOne(false), act: onDestination("disable") },
  "svc.api.sandbox.v1.SandboxClockService.Advance": {
    prepare: async () => ({ kind: "AUDIT_TARGET_KIND_SANDBOX_CLOCK", id: "sandbox-clock", userId: "", appId: "" }),
    act: onRow(() => root.client.POST("/api/v1/sandbox/clock/advance", { body: { duration: "1s" } })),
  },
  // Recorded on the automation: what each of its transactions did, the range asked for (no state of the automation before it).
  "svc.api.automations.v1.AutomationExecutionService.BulkRedrive": {
    act: async () => {
      const { hook } = await fixedAfterFailing();
      ts.clock.advance(1);
      const range = { since: "2026-01-01T00:00:00.000Z", until: new Date(ts.clock.now()).toISOString(), includeParked: true };
      const answer = await root.client.POST("/api/v1/automations/{id}/executions/redrive", { params: { path: { id: hook.id } }, body: range });
      return { answer, target: { kind: "AUDIT_TARGET_KIND_AUTOMATION", id: hook.id, userId: "", appId: "" } };
    },
    after: ({ answer }) => {
      const { since, until, includeParked } = answer.data as { since: string; until: string; includeParked: boolean };
      const through = new Date(Date.parse(until) - 1).toISOString();
      return { bulkRedrive: { since, until, includeParked, examinedCount: 1, redrivenCount: 1, madeDueCount: 0, alreadyRedrivenCount: 0, from: through, through } };
    },
  },
  "svc.api.automations.v1.WebhookEventService.Replay": {
    act: async () => {
      const { hook, eventId } = await fixedAfterFailing();
      const answer = await root.client.POST("/api/v1/automations/{id}/webhook-events/{event_id}/replay", { params: { path: { id: hook.id, event_id: eventId } }, body: {} });
      return { answer, target: newExecution(answer) };
    },
    after: answered,
  },
};

/** The operations the contract says change a target (`x-audit.target`), and those it exempts with a reason. */
const audited = operations.filter((o) => (o.op as { "x-audit"?: { target?: string } })["x-audit"]?.target);

describe("the contract decides, for every operation that can change state, whether it is audited", () => {
  it("every operation other than GET carries an x-audit decision: a target kind, or an exemption with its reason", () => {
    for (const o of operations.filter((op) => op.method !== "get")) {
      const decision = (o.op as { "x-audit"?: { target?: string; exempt?: string } })["x-audit"];
      expect(decision, `${o.operationId} has no x-audit decision`).toBeDefined();
      if (decision!.target) expect(contract.components.schemas.AuditTargetKind.enum, o.operationId).toContain(decision!.target);
      else expect(decision!.exempt, `${o.operationId}: an exemption says why`).toMatch(/^.{20,}$/);
    }
  });

  it("every audited operation has a case in this file, and no case names an operation that is not audited", () => {
    expect(Object.keys(CASES).sort()).toEqual(audited.map((o) => o.operationId).sort());
  });
});

describe("each audited operation records one event: the target read just before and just after, the caller, the request", () => {
  beforeAll(async () => void (mine = await ts.userClient(["ROLE_USER"], "Self-service subject")));

  it.each(audited.map((o) => [o.operationId, (o.op as { "x-audit": { target: Target["kind"] } })["x-audit"].target] as const))("%s", async (operationId, kind) => {
    const c = CASES[operationId]!;
    const prepared = await c.prepare?.();
    const before = prepared ? await READ[kind as keyof typeof READ](prepared) : null;
    const made = await c.act(prepared);
    const { answer, target } = made;
    expect(answer.response.status, JSON.stringify(answer.error)).toBeLessThan(300);
    const after = c.after ? c.after(made) : await READ[kind as keyof typeof READ](target);
    expect(target.kind).toBe(kind);

    const events = await allEvents(root.client, { target_kind: kind, target_id: target.id, operation_id: operationId });
    expect(events).toHaveLength(1);
    const event = events[0]!;
    expect(event.target).toEqual({ kind, id: target.id, userId: target.userId, appId: target.appId });
    expect(event.before).toEqual(before);
    expect(event.after).toEqual(after);
    const caller = operationId.includes("MyFundLimitsService") ? mine : root;
    const callerCredential = caller === root ? rootCredentialId : (await credentialsOf(mine.userId))[0]!.id;
    expect(event.actor).toEqual({ kind: "AUDIT_ACTOR_KIND_USER", userId: caller.userId, credentialId: callerCredential, automationId: "", executionId: "", eventId: "" });
    expect(event.requestId).toBe(answer.response.headers.get("x-request-id"));
    // The server's time: the test's clock, moved forward by the sandbox's Advance (Sandbox-Time).
    expect(event.createdAt).toBe(answer.response.headers.get("sandbox-time"));
  });
});

describe("what records nothing", () => {
  it("a change refused, and a change that changes nothing, record no event", async () => {
    const t = await limitedRow();
    const count = async () => (await allEvents(root.client, { target_kind: t.kind, target_id: t.id })).length;
    const n = await count();
    expectError(await f().setLimit(t.userId, t.appId, { limit: amount("-5"), period: "PERIOD_KIND_MONTHLY" }), 400);
    unwrap(await f().unsuspend(t.userId, t.appId));
    unwrap(await f().setLimit(t.userId, t.appId, { limit: amount("100"), period: "PERIOD_KIND_MONTHLY" }));
    expect(await count()).toBe(n);
  });

  it("reads, searches, step checks, tokens and spends record nothing", async () => {
    const t = await limitedRow();
    const total = async () => (await allEvents(root.client)).length;
    const n = await total();
    unwrap(await f().get(t.userId, t.appId));
    unwrap(await f().search({}));
    unwrap(await root.client.POST("/api/v1/funds/spend-authorizations", { params: { header: { "Idempotency-Key": newEventId() } }, body: { userId: t.userId, appId: t.appId, amount: money("5"), capture: true } }));
    expect(await total()).toBe(n);
  });
});

describe("a change made by an automation's step", () => {
  it("names the automation, the execution and the event that started it", async () => {
    const t = await limitedRow();
    const hook = await createHooked(ts, {
      steps: [{ stepName: "suspend", suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId", reasonCel: "'by automation'" } }],
    });
    const before = await READ.AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT(t);
    const eventId = newEventId();
    const accepted = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ userId: t.userId, appId: t.appId }), { eventId }));
    await ts.server.worker.idle();
    const after = await READ.AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT(t);
    const [event, ...more] = await allEvents(root.client, { target_kind: t.kind, target_id: t.id, operation_id: "svc.api.funds.v1.SubjectAppLimitService.Suspend" });
    expect(more).toEqual([]);
    expect(event!.actor).toEqual({ kind: "AUDIT_ACTOR_KIND_AUTOMATION_EXECUTION", userId: "", credentialId: "", automationId: hook.id, executionId: accepted.automationExecutionId!, eventId });
    expect(event!.requestId).toBe("");
    expect(event!.before).toEqual(before);
    expect(event!.after).toEqual(after);
    expect(await allEvents(root.client, { actor_execution_id: accepted.automationExecutionId! })).toEqual([event]);
  });
});

describe("who reads what", () => {
  it("a fund admin reads the fund's targets only; a user the events on their own limit rows; an app service nothing", async () => {
    const subject = await ts.userClient(["ROLE_USER"]);
    const other = await userRow();
    const appId = newAppId();
    unwrap(await f().setLimit(subject.userId, appId, { limit: amount("10"), period: "PERIOD_KIND_DAILY" }));
    unwrap(await f().setLimit(other.userId, other.appId, { limit: amount("10"), period: "PERIOD_KIND_DAILY" }));

    const fundAdmin = await ts.userClient(["ROLE_FUND_ADMIN"]);
    const kinds = new Set((await allEvents(fundAdmin.client)).map((e) => e.target.kind));
    expect([...kinds].sort()).toEqual(expect.arrayContaining(["AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT"]));
    for (const kind of kinds) expect(["AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT", "AUDIT_TARGET_KIND_APP_CAP", "AUDIT_TARGET_KIND_FUND_POLICY"]).toContain(kind);
    expect(unwrap(await list(fundAdmin.client, { target_kind: "AUDIT_TARGET_KIND_USER" })).list).toEqual([]);

    const own = await allEvents(subject.client);
    expect(own.map((e) => e.target)).toEqual([limitTarget(subject.userId, appId)]);
    expect(await allEvents(subject.client, { user_id: subject.userId })).toEqual(own);
    expectError(await list(subject.client, { user_id: other.userId }), 403, "SUBJECT_NOT_ALLOWED");

    const service = await ts.userClient(["ROLE_APP_SERVICE"]);
    expectError(await list(service.client), 403, "ROLE_NOT_ALLOWED");
  });
});

describe("filters, order and pages", () => {
  it("newest first across pages, each event once; since and until bound createdAt; actor and operation filters", async () => {
    const t = await userRow();
    const start = ts.clock.now();
    for (let i = 1; i <= 12; i++) {
      ts.clock.advance(1_000);
      unwrap(await f().setLimit(t.userId, t.appId, { limit: amount(String(i)), period: "PERIOD_KIND_MONTHLY" }));
    }
    const history = await allEvents(root.client, { target_kind: t.kind, user_id: t.userId, app_id: t.appId, page_size: 10 });
    expect(history).toHaveLength(12);
    expect(history.map((e) => (e.after as { controls: Schemas["SpendControls"] }).controls.limit?.amount?.money?.units)).toEqual(["12", "11", "10", "9", "8", "7", "6", "5", "4", "3", "2", "1"]);
    const ids = history.map((e) => e.id);
    expect([...ids].sort().reverse()).toEqual(ids);

    const window = await allEvents(root.client, { target_id: t.id, since: iso(start + 3_000), until: iso(start + 6_000) });
    expect(window.map((e) => e.createdAt)).toEqual([iso(start + 5_000), iso(start + 4_000), iso(start + 3_000)]);
    expect(await allEvents(root.client, { target_id: t.id, actor_user_id: root.userId })).toHaveLength(12);
    expect((await allEvents(root.client, { app_id: t.appId })).map((e) => e.id)).toEqual(ids);
    expect((await allEvents(root.client, { app_id: t.appId, operation_id: "svc.api.funds.v1.SubjectAppLimitService.SetLimit" })).map((e) => e.id)).toEqual(ids);
    expect(await allEvents(root.client, { target_id: t.id, actor_user_id: t.userId })).toEqual([]);
    expect(await allEvents(root.client, { target_id: t.id, operation_id: "svc.api.funds.v1.SubjectAppLimitService.Suspend" })).toEqual([]);
    expect(await allEvents(root.client, { target_id: t.id, since: "9999-12-31T23:59:59Z" })).toEqual([]);
    expect(await allEvents(root.client, { target_id: t.id, until: "0001-01-01T00:00:00Z" })).toEqual([]);
  });

  it("a page stops before 8 MiB of states before and after, holding at least one; the pages still list each event once", async () => {
    // 48 expressions of 4,000 characters: an automation of about 192 KB, recorded before and after each rename.
    const expressions = Array.from({ length: 48 }, (_, i) => ({ name: `e${i}`, expression: `'${String(i % 10).repeat(3_996)}'` }));
    const automation = unwrap(await automationsApi(root.client).create({ displayName: "Large", isDraft: true, enabled: false, triggers: [{ webhook: { hmac: {} } }], automationSteps: [{ stepName: "big", evaluateExpressions: { expressions } }] })).automation;
    const renames = 24;
    for (let i = 1; i <= renames; i++) unwrap(await automationsApi(root.client).update(automation.id!, { displayName: `Large ${i}` }, "displayName"));
    const pages: AuditEvent[][] = [];
    let token: string | undefined;
    do {
      const page = unwrap(await list(root.client, { target_id: automation.id!, page_size: 100, ...(token ? { page_token: token } : {}) }));
      pages.push(page.list.map((i) => i.auditEvent));
      token = page.nextPageToken || undefined;
    } while (token);
    const stored = (e: AuditEvent) => (e.before ? JSON.stringify(e.before).length : 0) + (e.after ? JSON.stringify(e.after).length : 0);
    expect(pages.length).toBeGreaterThan(1);
    for (const page of pages) {
      expect(page.length).toBeGreaterThan(0);
      expect(page.reduce((sum, e) => sum + stored(e), 0)).toBeLessThanOrEqual(8 * 1024 * 1024);
    }
    // The first page stopped short because the next event would not fit, not before.
    const [first, second] = pages as [AuditEvent[], AuditEvent[]];
    expect(first.reduce((sum, e) => sum + stored(e), 0) + stored(second[0]!)).toBeGreaterThan(8 * 1024 * 1024);
    const events = pages.flat();
    expect(events).toHaveLength(renames + 1);
    expect(new Set(events.map((e) => e.id)).size).toBe(renames + 1);
    expect(events.map((e) => e.operationId).at(-1)).toBe("svc.api.automations.v1.AutomationService.CreateAutomation");
  }, 120_000);

  it("refuses the zero kind, a timestamp out of range, and a page token of other filters or another caller", async () => {
    expectError(await list(root.client, { target_kind: "AUDIT_TARGET_KIND_UNSPECIFIED" }), 400, "INVALID_ARGUMENT");
    // A valid RFC 3339 timestamp before year 0001 in UTC: the contract's invalidTimestamp example.
    const early = await list(root.client, { since: "0001-01-01T00:00:00+01:00" });
    expectError(early, 400, "INVALID_TIMESTAMP");
    expect((early.error as { message: string }).message).toBe("query.since: must be in years 0001 to 9999 (UTC)");
    expectError(await list(root.client, { target_kind: "AUDIT_TARGET_KIND_NOPE" as never }), 400, "INVALID_ARGUMENT");
    const t = await userRow();
    for (let i = 1; i <= 11; i++) unwrap(await f().setLimit(t.userId, t.appId, { limit: amount(String(i)), period: "PERIOD_KIND_MONTHLY" }));
    const page = unwrap(await list(root.client, { page_size: 10 }));
    expect(page.nextPageToken).not.toBe("");
    expectError(await list(root.client, { page_size: 10, page_token: page.nextPageToken, target_kind: "AUDIT_TARGET_KIND_USER" }), 400, "INVALID_PAGE_TOKEN");
    expectError(await list(ts.admin, { page_size: 10, page_token: page.nextPageToken }), 400, "INVALID_PAGE_TOKEN");
  });
});

describe("the event and its change commit together, and events are never changed", () => {
  /** Makes the database refuse every audit event while `during` runs, as a failing disk or a full table would. */
  async function refusingAudits(during: () => Promise<void>): Promise<void> {
    await withDatabase(ts.databaseUrl, async (db, dialect) => {
      if (dialect === "sqlite") {
        // SQLite records into the inbox (src/audit/audit-inbox.ts); PostgreSQL's inbox writes through to audit_events.
        await sql`create trigger audit_events_refused before insert on audit_inbox begin select raise(abort, 'refused by the test'); end`.execute(db);
      } else {
        await sql`create function audit_events_refused() returns trigger language plpgsql as $$ begin raise exception 'refused by the test'; end $$`.execute(db);
        await sql`create trigger audit_events_refused before insert on audit_events for each row execute function audit_events_refused()`.execute(db);
      }
    });
    try {
      await during();
    } finally {
      await withDatabase(ts.databaseUrl, async (db, dialect) => {
        await sql`drop trigger audit_events_refused${sql.raw(dialect === "postgres" ? " on audit_events" : "")}`.execute(db);
        if (dialect === "postgres") await sql`drop function audit_events_refused()`.execute(db);
      });
    }
  }

  it("a change whose event cannot be recorded does not happen: limit rows, caps, users, automations", async () => {
    const t = await limitedRow();
    const row = await READ.AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT(t);
    const hook = await createHooked(ts);
    const automation = await READ.AUDIT_TARGET_KIND_AUTOMATION({ kind: "AUDIT_TARGET_KIND_AUTOMATION", id: hook.id, userId: "", appId: "" });
    const capApp = newAppId("cap");
    const users = (await allEvents(root.client, { target_kind: "AUDIT_TARGET_KIND_USER" })).length;
    await refusingAudits(async () => {
      expect((await f().setLimit(t.userId, t.appId, { limit: amount("999"), period: "PERIOD_KIND_MONTHLY" })).response.status).toBe(500);
      expect((await f().suspend(t.userId, t.appId, { reason: "refused" })).response.status).toBe(500);
      expect((await f().delete(t.userId, t.appId)).response.status).toBe(500);
      expect((await f().capSet(capApp, { controls: { limit: amount("5"), period: "PERIOD_KIND_MONTHLY" } })).response.status).toBe(500);
      expect((await root.client.POST("/api/v1/users", { body: { displayName: "Refused", email: `refused-${newEventId()}@example.com`, roles: ["ROLE_USER"] } })).response.status).toBe(500);
      expect((await automationsApi(root.client).update(hook.id, { displayName: "Refused" }, "displayName")).response.status).toBe(500);
    });
    expect(await READ.AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT(t)).toEqual(row);
    expect((await f().capGet(capApp)).response.status).toBe(404);
    expect((await allEvents(root.client, { target_kind: "AUDIT_TARGET_KIND_USER" })).length).toBe(users);
    expect(await READ.AUDIT_TARGET_KIND_AUTOMATION({ kind: "AUDIT_TARGET_KIND_AUTOMATION", id: hook.id, userId: "", appId: "" })).toEqual(automation);
  });

  it("the database refuses to update an audit event", async () => {
    const t = await limitedRow();
    const [event] = await allEvents(root.client, { target_id: t.id });
    // In the trail: on SQLite, moved there from the inbox now rather than within a second.
    await withStorage(ts, moveAuditInbox);
    await withDatabase(ts.databaseUrl, async (db) => {
      await expect(db.updateTable("audit_events").set({ after_state: "{}" }).where("id", "=", event!.id).execute()).rejects.toThrow(/append-only/);
    });
    expect(await allEvents(root.client, { target_id: t.id })).toEqual([event]);
  });
});

describe("on SQLite, events are recorded into an inbox that the server moves into the trail in batches", () => {
  it("lists show them the same before, across and after their move, each once, newest first", async () => {
    // A server that would move its inbox only in an hour: the test moves it itself, when it means to.
    const held = await startTestServer({}, undefined, { auditInboxMoveMs: 3_600_000 });
    await withStorage(held, async (storage) => {
      const admin = await held.userClient(["ROLE_SUPER_ADMIN"]);
      const t = limitTarget((await held.userClient(["ROLE_USER"])).userId, newAppId());
      const setLimits = async (from: number, to: number) => {
        for (let i = from; i <= to; i++) {
          held.clock.advance(1_000);
          unwrap(await funds(held.admin).setLimit(t.userId, t.appId, { limit: amount(String(i)), period: "PERIOD_KIND_MONTHLY" }));
        }
      };
      const history = () => allEvents(admin.client, { target_id: t.id, page_size: 4 });
      const inbox = () => storage.db.selectFrom("audit_inbox").select("id").execute();
      const ofTarget = (ids: { id: string }[], events: AuditEvent[]) => events.filter((e) => ids.some((r) => r.id === e.id));
      const sqlite = storage.dialect === "sqlite";

      await setLimits(1, 6);
      const recorded = await history();
      expect(recorded.map((e) => (e.after as { controls: Schemas["SpendControls"] }).controls.limit?.amount?.money?.units)).toEqual(["6", "5", "4", "3", "2", "1"]);
      const waiting = await inbox();
      if (sqlite) {
        expect(ofTarget(waiting, recorded)).toEqual(recorded);
        // Append-only in the inbox too.
        await expect(storage.db.updateTable("audit_inbox").set({ after_state: "{}" }).where("id", "=", recorded[0]!.id).execute()).rejects.toThrow(/append-only/);
      }

      expect(await moveAuditInbox(storage)).toEqual({ moved: sqlite ? waiting.length : 0, caughtUp: true });
      if (sqlite) expect(await inbox()).toHaveLength(0);
      expect(await history()).toEqual(recorded);

      // Six in the trail, five in the inbox: pages of four cross from one to the other.
      await setLimits(7, 11);
      const across = await history();
      expect(across).toHaveLength(11);
      expect(across.slice(5)).toEqual(recorded);
      expect(across.map((e) => e.id)).toEqual(across.map((e) => e.id).sort().reverse());
      if (sqlite) expect(ofTarget(await inbox(), across)).toEqual(across.slice(0, 5));

      await moveAuditInbox(storage);
      expect(await history()).toEqual(across);
    }).finally(() => held.stop());
  });
});
