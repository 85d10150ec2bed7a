// What the sandbox holds, made through the real API with the typed client, as a tenant would make
// it: users of each role with their credentials and a team past one page of users, limits on every layer, spend authorizations in each
// state, an automation on a usage threshold, a listener of each kind (HMAC, JWT, Standard Webhooks, GitHub, Stripe), and a few events
// through the real intake with the executions they ran.
import type { JWK } from "jose";
import { createApiClient, unwrap, type ApiClient } from "../../src/client/index.js";
import { sendWebhookEvent } from "../../src/client/webhook-sender.js";
import { JWT_ALG, JWT_KID } from "./jwks.js";

type Role = "ROLE_SUPER_ADMIN" | "ROLE_FUND_ADMIN" | "ROLE_USER" | "ROLE_APP_SERVICE";

export interface SeededUser {
  userId: string;
  displayName: string;
  role: Role;
  clientId: string;
  clientSecret: string;
  /** The apps its credential is bound to: an app service's, `[]` for the others. */
  appIds: string[];
}

/** The listener kinds verified with a shared secret, the sandbox seeding each with a generated one. */
type SecretKind = "hmac" | "standardWebhooks" | "github" | "stripe";

/** A listener verified with a shared secret, and that secret. */
export interface SecretListener {
  automationId: string;
  listenerUrl: string;
  webhookSecret: string;
}

export interface Seeded {
  users: SeededUser[];
  currencyCode: string;
  /** The fund policy's IANA time zone: spend windows follow its calendar. */
  timeZone: string;
  appCaps: string[];
  /** Users without a credential, enough that the users list runs past its smallest page (10). */
  teamUserIds: string[];
  /** The rows seeded on subject-app limits, by what they show. */
  limits: { userId: string; appId: string; shows: string }[];
  /** The spend authorizations seeded, by what they show. */
  authorizations: { id: string; userId: string; appId: string; state: string; shows: string }[];
  hmac: SecretListener;
  /** The listeners of senders with a scheme of their own, each verified with a generated secret in its sender's form. */
  standardWebhooks: SecretListener;
  github: SecretListener;
  stripe: SecretListener;
  jwt: { automationId: string; listenerUrl: string; jwksUrl: string };
  /** Ids of the executions the seeded events started. */
  executionIds: string[];
  /** An automation on fund events: Salesforce usage at 80 % of a subject's limit. */
  thresholdAutomationId: string;
}

/** The automation on a usage threshold, published (the console's tests show it as the sandbox has it). */
export const THRESHOLD_AUTOMATION = {
  displayName: "Salesforce usage at 80 % of the limit",
  description: "When a subject's Salesforce usage reaches 80 % of the month's limit, note who and how much.",
  isDraft: false,
  enabled: true,
  triggers: [{ fundEvents: { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [80], conditionCel: 'ctx.trigger.appId == "app-salesforce"' } }],
  automationSteps: [{ stepName: "note", evaluateExpressions: { expressions: [{ name: "userId", expression: "ctx.trigger.userId" }, { name: "usage", expression: "ctx.trigger.usageThreshold.usage" }] } }],
};

const usd = (units: string) => ({ amount: { money: { currencyCode: "USD", units, nanos: 0 } } });
const DAY_MS = 86_400_000;

/** A user with one role and a credential of its own, bound to `appIds` (an app service's). */
async function addUser(admin: ApiClient, baseUrl: string, displayName: string, email: string, role: Role, appIds: string[] = []): Promise<SeededUser> {
  const { user } = unwrap(await admin.POST("/api/v1/users", { body: { displayName, email, roles: [role] } }));
  const userId = user.id!;
  const made = unwrap(
    await admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId } }, body: { displayName: "sandbox", ...(appIds.length > 0 ? { appIds } : {}) } }),
  );
  return { userId, displayName, role, clientId: made.credential.clientId, clientSecret: made.clientSecret, appIds: made.credential.appIds };
}

/** Ada's and Sam's colleagues: users with no credential, so that `GET /api/v1/users` shows a next page even at its smallest page size. */
const TEAM = ["Grace Hopper", "Alan Turing", "Katherine Johnson", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth", "Frances Allen", "John Backus"];

async function addTeam(admin: ApiClient): Promise<string[]> {
  const ids: string[] = [];
  for (const displayName of TEAM) {
    const email = `${displayName.split(" ")[0]!.toLowerCase()}@sandbox.example`;
    ids.push(unwrap(await admin.POST("/api/v1/users", { body: { displayName, email, roles: ["ROLE_USER"] } })).user.id!);
  }
  return ids;
}

/** Suspends the app limit of `ctx.trigger.userId` for `ctx.trigger.appId` when the event is `card.lost`. */
const cardLostSteps = [
  { stepName: "parse", evaluateExpressions: { expressions: [{ name: "isLost", expression: 'ctx.trigger.event == "card.lost"' }] } },
  {
    stepName: "suspend",
    skipIfTrueCel: "!ctx.steps.parse.isLost",
    suspendAppLimit: { userIdCel: "ctx.trigger.userId", appIdCel: "ctx.trigger.appId", reasonCel: '"Card reported lost"' },
  },
];

/** Spends of Ada on app-salesforce (250 a month), one in each state, and a decline of Sam's suspended row. */
async function addSpends(funds: ApiClient, ada: SeededUser, sam: SeededUser): Promise<Seeded["authorizations"]> {
  // Each call has its own key, as an app's backend would send (the key is required on Authorize).
  const key = () => ({ header: { "Idempotency-Key": crypto.randomUUID() } });
  const authorize = async (user: SeededUser, units: string, extra: { capture?: boolean; holdSeconds?: number; metadata?: Record<string, string> } = {}) =>
    unwrap(await funds.POST("/api/v1/funds/spend-authorizations", { params: key(), body: { userId: user.userId, appId: "app-salesforce", amount: usd(units).amount.money, ...extra } })).authorization;
  const at = (id: string) => ({ params: { ...key(), path: { authorization_id: id } } });

  const recorded = await authorize(ada, "40", { capture: true, metadata: { orderId: "ord_1001" } });
  const refunded = await authorize(ada, "25", { metadata: { orderId: "ord_1002" } });
  unwrap(await funds.POST("/api/v1/funds/spend-authorizations/{authorization_id}/capture", { ...at(refunded.id), body: {} }));
  const reversed = unwrap(await funds.POST("/api/v1/funds/spend-authorizations/{authorization_id}/reverse", { ...at(refunded.id), body: { amount: usd("5").amount.money } })).authorization;
  const voided = await authorize(ada, "10", { metadata: { orderId: "ord_1003" } });
  const released = unwrap(await funds.POST("/api/v1/funds/spend-authorizations/{authorization_id}/release", { ...at(voided.id), body: {} })).authorization;
  // Held for the longest hold the API allows, so that it is still pending while a partner explores.
  const pending = await authorize(ada, "15", { holdSeconds: 604_800, metadata: { orderId: "ord_1004" } });
  const overLimit = await authorize(ada, "500", { metadata: { orderId: "ord_1005" } });
  const suspended = await authorize(sam, "20", { metadata: { orderId: "ord_2001" } });

  const shown = (a: { id: string; userId: string; appId: string; state: string }, shows: string) => ({ id: a.id, userId: a.userId, appId: a.appId, state: a.state, shows });
  return [
    shown(recorded, "USD 40 recorded directly (capture: true)"),
    shown(reversed, "USD 25 held, captured, then USD 5 reversed (a refund)"),
    shown(released, "USD 10 held, then released"),
    shown(pending, "USD 15 held for 7 days"),
    shown(overLimit, "USD 500 declined: over the limit (USD 60 spent and USD 15 held of USD 250)"),
    shown(suspended, "USD 20 declined: Sam's row is suspended"),
  ];
}

/** Notes the delivery the execution started from: the sender's event id and type, which steps read as `ctx.webhook`. */
const deliverySteps = [
  { stepName: "note", evaluateExpressions: { expressions: [{ name: "eventId", expression: "ctx.webhook.eventId" }, { name: "eventType", expression: "ctx.webhook.eventType" }] } },
];

async function addListener(
  admin: ApiClient,
  displayName: string,
  webhook: { [K in SecretKind]: Record<K, Record<string, never>> }[SecretKind] | { jwt: { jwksUrl: string } },
  automationSteps: typeof cardLostSteps | typeof deliverySteps = cardLostSteps,
): Promise<SecretListener> {
  const saved = unwrap(
    await admin.POST("/api/v1/automations", {
      body: { automation: { displayName, isDraft: false, enabled: true, triggers: [{ webhook }], automationSteps } },
    }),
  );
  const first = saved.automation.triggers?.[0];
  const trigger = first && "webhook" in first ? first.webhook : undefined;
  return { automationId: saved.automation.id!, listenerUrl: trigger!.url!, webhookSecret: saved.webhookSecret ?? "" };
}

export async function seed(options: {
  baseUrl: string;
  admin: { clientId: string; clientSecret: string };
  jwksUrl: string;
  privateJwk: JWK;
}): Promise<Seeded> {
  const { baseUrl } = options;
  const admin = createApiClient({ baseUrl, credentials: options.admin });
  const me = unwrap(await admin.GET("/api/v1/users", { params: { query: { page_size: 10 } } })).list[0]!.user;
  const superAdmin: SeededUser = { userId: me.id!, displayName: me.displayName!, role: "ROLE_SUPER_ADMIN", ...options.admin, appIds: [] };
  const fundAdmin = await addUser(admin, baseUrl, "Fiona Fundadmin", "fiona@sandbox.example", "ROLE_FUND_ADMIN");
  const ada = await addUser(admin, baseUrl, "Ada User", "ada@sandbox.example", "ROLE_USER");
  const sam = await addUser(admin, baseUrl, "Sam User", "sam@sandbox.example", "ROLE_USER");
  // An app's backend: it spends the subjects' funds for the apps its credential is bound to.
  const billing = await addUser(admin, baseUrl, "Billing backend", "billing@sandbox.example", "ROLE_APP_SERVICE", ["app-salesforce", "app-github"]);
  const teamUserIds = await addTeam(admin);

  // The three layers: the fund policy's default, app caps, subject-app rows (set by the fund admin and by a user).
  const funds = createApiClient({ baseUrl, credentials: fundAdmin });
  const policy = unwrap(await funds.GET("/api/v1/funds/policy", {})).fundPolicy;
  unwrap(
    await admin.POST("/api/v1/funds/policy", {
      body: { fundPolicy: { currencyCode: policy.currencyCode, defaultControls: { limit: usd("100"), period: "PERIOD_KIND_MONTHLY" } }, updateMask: "defaultControls" },
    }),
  );
  unwrap(await funds.POST("/api/v1/funds/app-caps/{app_id}", { params: { path: { app_id: "app-salesforce" } }, body: { controls: { limit: usd("1000"), period: "PERIOD_KIND_MONTHLY" } } }));
  unwrap(await funds.POST("/api/v1/funds/app-caps/{app_id}", { params: { path: { app_id: "app-zoom" } }, body: { controls: { limit: { blocked: {} } } } }));
  const row = (user: SeededUser, appId: string) => ({ params: { path: { user_id: user.userId, app_id: appId } } });
  unwrap(await funds.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { ...row(ada, "app-salesforce"), body: { limit: usd("250"), period: "PERIOD_KIND_MONTHLY" } }));
  unwrap(await funds.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { ...row(sam, "app-salesforce"), body: { limit: usd("300"), period: "PERIOD_KIND_MONTHLY" } }));
  unwrap(await funds.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/suspension", { ...row(sam, "app-salesforce"), body: { reason: "Card reported lost" } }));
  unwrap(await funds.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", { ...row(sam, "app-github"), body: { limit: usd("50"), period: "PERIOD_KIND_WEEKLY" } }));
  unwrap(
    await funds.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/extension", {
      ...row(sam, "app-github"),
      body: { limit: usd("500"), expiresAt: new Date(Date.now() + 30 * DAY_MS).toISOString(), reason: "Quarter-end travel" },
    }),
  );
  const adaClient = createApiClient({ baseUrl, credentials: ada });
  unwrap(await adaClient.POST("/api/v1/funds/my/app-limits/{app_id}/limit", { params: { path: { app_id: "app-github" } }, body: { limit: usd("40"), period: "PERIOD_KIND_WEEKLY" } }));

  // Before the spends: those that take a subject's Salesforce window to 80 % of its limit start it.
  const threshold = unwrap(await admin.POST("/api/v1/automations", { body: { automation: THRESHOLD_AUTOMATION } }));
  const authorizations = await addSpends(funds, ada, sam);

  const hmac = await addListener(admin, "Suspend the app limit when a card is lost (HMAC)", { hmac: {} });
  const jwt = await addListener(admin, "Suspend the app limit when a card is lost (JWT)", { jwt: { jwksUrl: options.jwksUrl } });
  const standardWebhooks = await addListener(admin, "Note Standard Webhooks deliveries", { standardWebhooks: {} }, deliverySteps);
  const github = await addListener(admin, "Note GitHub deliveries", { github: {} }, deliverySteps);
  const stripe = await addListener(admin, "Note Stripe events", { stripe: {} }, deliverySteps);

  // Events through the real intake: one that suspends Ada's GitHub limit, one whose step is skipped, one signed as a JWT.
  const events = [
    { url: hmac.listenerUrl, body: { event: "card.lost", userId: ada.userId, appId: "app-github" }, auth: { hmac: { secret: hmac.webhookSecret } } },
    { url: hmac.listenerUrl, body: { event: "card.found", userId: ada.userId, appId: "app-github" }, auth: { hmac: { secret: hmac.webhookSecret } } },
    {
      url: jwt.listenerUrl,
      body: { event: "card.found", userId: sam.userId, appId: "app-salesforce" },
      auth: { jwt: { privateKey: options.privateJwk, kid: JWT_KID, alg: JWT_ALG, baseUrl } as const },
    },
  ];
  const executionIds: string[] = [];
  for (const event of events) {
    const sent = await sendWebhookEvent({ url: event.url, body: JSON.stringify(event.body), auth: event.auth });
    if (sent.status !== 200) throw new Error(`seeding: the intake answered ${sent.status} ${JSON.stringify(sent.response)}`);
    executionIds.push((sent.response as { webhookEvent: { automationExecutionId: string } }).webhookEvent.automationExecutionId);
  }

  return {
    users: [superAdmin, fundAdmin, ada, sam, billing],
    currencyCode: policy.currencyCode,
    timeZone: policy.timeZone ?? "UTC",
    appCaps: ["app-salesforce", "app-zoom"],
    teamUserIds,
    limits: [
      { userId: ada.userId, appId: "app-salesforce", shows: "a limit of 250 a month" },
      { userId: ada.userId, appId: "app-github", shows: "a limit Ada set herself (40 a week), suspended by the seeded card.lost event" },
      { userId: sam.userId, appId: "app-salesforce", shows: "a limit of 300 a month, suspended" },
      { userId: sam.userId, appId: "app-github", shows: "a limit of 50 a week with an extension to 500 for 30 days" },
    ],
    authorizations,
    hmac,
    standardWebhooks,
    github,
    stripe,
    jwt: { automationId: jwt.automationId, listenerUrl: jwt.listenerUrl, jwksUrl: options.jwksUrl },
    executionIds,
    thresholdAutomationId: threshold.automation.id!,
  };
}
