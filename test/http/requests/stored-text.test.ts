// Every stored value can be answered. fast-check writes random text into every text field an
// operation stores (enumerated from the contract below: a new one fails the first test until it is
// written here): users' and credentials' display names; the reasons of subject rows, app caps and
// the fund policy's default controls; automations' names, descriptions and every CEL expression;
// the reasons automation steps compute from a signed webhook; spend metadata values. Each write
// either stores the text as sent or refuses it, 400 INVALID_ARGUMENT naming the field, exactly
// when the contract's text rule or length refuses it; then every operation that reads what was
// stored answers 200 with the text as sent, and its answer passes the contract (the server
// validates its own answers in tests, and the test's client checks them again). Seeded: FC_SEED
// replays a run, FC_RUNS sets the number of runs.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { deref, operations } from "../../support/contract.js";
import { testDialect } from "../../support/database.js";
import type { TestServer } from "../../support/server.js";
import { amount, HOUR, iso, money, newAppId, reasonOf, type Answer, type Funds } from "../limits/helpers.js";
import type { Spends } from "../spends/helpers.js";
import { startTextServer } from "./text-helpers.js";
import { createHooked, expectAccepted, sendHmac, settled, type AutomationsApi, type Hooked, type Step } from "../webhooks/helpers.js";
import { webhookTrigger } from "../../support/triggers.js";

const SEED = Number(process.env.FC_SEED ?? 20_261_128);
const RUNS = Number(process.env.FC_RUNS ?? 6);

// The rule as the contract states it, restated rather than imported from the server.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const UNPAIRED = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const length = (s: string) => [...s].length;
const fits = (s: string, max: number, min = 0) => !CONTROL.test(s) && !UNPAIRED.test(s) && length(s) >= min && length(s) <= max;

/** The pattern that declares the text rule on the fields of request-only schemas. */
const TEXT_PATTERN = "^[^\\u0000-\\u0008\\u000B-\\u001F\\u007F-\\u009F]*$";

/**
 * The string fields of request bodies, as `<schema>.<path>` (`SpendSuspension.reason`,
 * `SpendMetadata.*`), that take text: no pattern (but the text rule's), format or enumeration narrows them, and the
 * server sets none of them (readOnly).
 */
function textFields(): Set<string> {
  const out = new Set<string>();
  const visit = (node: any, where: string, depth: number): void => {
    if (depth > 30) return;
    const name = typeof node?.$ref === "string" ? (node.$ref as string).split("/").pop() : undefined;
    const s = deref(node);
    const at = name ?? where;
    for (const arm of (s.oneOf ?? s.anyOf ?? []) as unknown[]) visit(arm, at, depth + 1);
    const types = [s.type].flat();
    if (s.readOnly) return;
    if (types.includes("string") && (!s.pattern || s.pattern === TEXT_PATTERN) && !s.format && !s.enum && !s.const) out.add(at);
    for (const [key, member] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) visit(member, `${at}.${key}`, depth + 1);
    if (typeof s.additionalProperties === "object") visit(s.additionalProperties, `${at}.*`, depth + 1);
    if (s.items) visit(s.items, `${at}[]`, depth + 1);
  };
  for (const op of operations) {
    const content = deref(op.op.requestBody).content as Record<string, { schema: unknown }> | undefined;
    for (const media of Object.values(content ?? {})) visit(media.schema, op.operationId, 0);
  }
  return out;
}

/** Text fields no operation stores, or stored under rules of their own. */
const NOT_STORED_TEXT = new Set([
  // The token request and a search's page token are read, never stored.
  "TokenServiceCreateTokenRequest.grant_type",
  "TokenServiceCreateTokenRequest.client_id",
  "TokenServiceCreateTokenRequest.client_secret",
  "TokenServiceCreateTokenRequest.scope",
  "TokenServiceCreateTokenRequest.*",
  "SubjectAppLimitServiceSearchRequest.pageToken",
  "AutomationExecutionServiceBulkRedriveRequest.continuationToken",
  // An IANA time zone name: stored only when the server knows it.
  "FundPolicy.timeZone",
  // A notify step's URL: stored only as an https URL the outbound guard takes, normalized (automations/notify.test.ts).
  "StepNotify.url",
]);

/** Each text field the runs below write, and how. */
const WRITTEN = new Set([
  "UserServiceCreateRequest.displayName",
  "CredentialServiceCreateRequest.displayName",
  "SubjectAppLimitServiceSuspendRequest.reason",
  "SubjectAppLimitServiceSetExtensionRequest.reason",
  "SpendSuspension.reason", // app caps and the default controls
  "SpendExtension.reason",
  "SpendMetadata.*",
  "Automation.displayName",
  "Automation.description",
  "AutomationStep.skipIfTrueCel",
  "NamedExpression.expression",
  "StepSuspendAppLimit.userIdCel",
  "StepSuspendAppLimit.appIdCel",
  "StepSuspendAppLimit.reasonCel",
  "StepUnsuspendAppLimit.userIdCel",
  "StepUnsuspendAppLimit.appIdCel",
  "StepSetAppLimitExtension.userIdCel",
  "StepSetAppLimitExtension.appIdCel",
  "StepSetAppLimitExtension.expiresAtCel",
  "StepSetAppLimitExtension.reasonCel",
  "StepNotify.bodyCel",
  "FundEventTrigger.conditionCel",
]);

// ---- text ----------------------------------------------------------------------------------------

const join = (cs: string[]) => cs.join("");
/** Characters a text field takes: ASCII, those JSON escapes longest or that look odd, any other code point. */
const fitChar = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.constantFrom('"', "\\", "/", "\t", "\n", "😀", "é", "\u00a0", "\u2028", "\u200b", "\u202e", "\ufeff", "\udbff\udfff") },
  { weight: 2, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }).filter((c) => fits(c, 1)) },
);
const unfitChar = fc.constantFrom("\u0000", "\u0001", "\u0008", "\u000b", "\r", "\u001b", "\u001f", "\u007f", "\u0085", "\u009f", "\ud800", "\udfff");

/** Text for a field of `min` to `max` characters: short, at the bound (one past it too), or one character repeated; now and then one unfit character in it. */
function text(max: number, min = 0): fc.Arbitrary<string> {
  const fitting = fc.oneof(
    fc.array(fitChar, { minLength: min, maxLength: Math.min(max, 16) }).map(join),
    fc.array(fitChar, { minLength: max - 2, maxLength: max + 1 }).map(join),
    fc.tuple(fitChar, fc.integer({ min: Math.max(min, 1), max })).map(([c, n]) => c.repeat(n)),
  );
  return fc.tuple(fitting, fc.option(fc.tuple(unfitChar, fc.nat()), { freq: 5 })).map(([s, bad]) => {
    if (!bad) return s;
    const cs = [...s];
    cs.splice(bad[1] % (cs.length + 1), 0, bad[0]);
    return join(cs);
  });
}

/** A CEL expression carrying `note` in comments, one per line of it. */
const withNote = (expression: string, note: string) => expression + note.split("\n").map((line) => `\n// ${line}`).join("");

// ---- the server ------------------------------------------------------------------------------

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let api: AutomationsApi;
let subject: { userId: string; f: Funds };
/** Runs the steps when a run's own automation is refused. */
let fallback: Hooked;
let written = 0;

beforeAll(async () => {
  ({ ts, admin, spend, api, subject } = await startTextServer());
  fallback = await createHooked(ts, { steps: steps("") });
});
afterAll(async () => ts?.stop());

/** The steps of a run: every kind, every CEL field carrying `note`. */
function steps(note: string): Step[] {
  const cel = (expression: string) => withNote(expression, note);
  const target = (app: string) => ({ userIdCel: cel("ctx.trigger.userId"), appIdCel: cel(`ctx.trigger.${app}`) });
  return [
    { stepName: "note", skipIfTrueCel: cel("false"), evaluateExpressions: { expressions: [{ name: "reason", expression: cel("ctx.trigger.reason") }] } },
    { stepName: "lift", unsuspendAppLimit: target("lifted") },
    { stepName: "suspend", suspendAppLimit: { ...target("suspended"), reasonCel: cel("ctx.trigger.reason") } },
    { stepName: "extend", setAppLimitExtension: { ...target("extended"), limit: amount("50"), expiresAtCel: cel("timestamp(ctx.trigger.until)"), reasonCel: cel("ctx.trigger.reason") } },
    // Skipped: its body is stored and answered, nothing is sent.
    { stepName: "tell", skipIfTrueCel: "true", notify: { url: "https://hooks.example.com/stored", bodyCel: cel("ctx.trigger.reason") } } as Step,
  ];
}

/** A write's answer: the data when the text fits (`fit`), else a 400 INVALID_ARGUMENT naming one of `fields`. */
function expectWritten<T>(answer: Answer & { data?: T }, fit: boolean, fields: string[]): T | undefined {
  if (fit) {
    expect(answer.response.status, JSON.stringify(answer.error)).toBe(200);
    return answer.data;
  }
  expect([answer.response.status, reasonOf(answer.error)], JSON.stringify(answer.error)).toEqual([400, "INVALID_ARGUMENT"]);
  expect(fields).toContain((answer.error as { message: string }).message.split(": ")[0]);
  return undefined;
}

/** Every read of a subject row (administrator and self-service, one, searched, listed and effective), and a spend decided on it. */
async function readRow(app: string) {
  const limit = unwrap(await admin.get(subject.userId, app)).limit;
  expect(unwrap(await subject.f.myGet(app)).limit.controls).toEqual(limit.controls);
  unwrap(await subject.f.myList({ page_size: 100 }));
  unwrap(await admin.search({ userIds: [subject.userId], appIds: [app] }));
  const effective = unwrap(await admin.effective(subject.userId, app)).effective;
  expect(unwrap(await subject.f.myEffective(app)).effective.trace).toEqual(effective.trace);
  await decide(app);
  return limit.controls;
}

/** Authorize on `app`, then Get and List of the authorization: 200 each, the same authorization. */
async function decide(app: string, metadata?: Record<string, string>) {
  const answer = await spend.authorize({ userId: subject.userId, appId: app, amount: money("1"), ...(metadata ? { metadata } : {}) });
  const authorization = unwrap(answer).authorization;
  expect(unwrap(await spend.get(authorization.id)).authorization).toEqual(authorization);
  expect(unwrap(await spend.list({ app_id: app, page_size: 100 })).list.map((i) => i.authorization)).toContainEqual(authorization);
  return authorization;
}

const texts = fc.record({
  user: text(200, 1),
  credential: text(200),
  suspension: text(500),
  extension: text(500),
  capSuspension: text(500),
  capExtension: text(500),
  policySuspension: text(500),
  policyExtension: text(500),
  name: text(200, 1),
  description: text(2000),
  note: text(300),
  stepReason: text(500),
  metadata: text(500),
});

type Texts = typeof texts extends fc.Arbitrary<infer T> ? T : never;

async function writeAndRead(t: Texts): Promise<void> {
  const n = ++written;
  const expiresAt = iso(ts.clock.now() + HOUR);

  // Users and credentials.
  const user = expectWritten(await ts.admin.POST("/api/v1/users", { body: { displayName: t.user, email: `stored-text-${n}@example.com`, roles: ["ROLE_USER"] } }), fits(t.user, 200, 1), ["body.displayName"]);
  if (user) {
    expect(unwrap(await ts.admin.GET("/api/v1/users/{user_id}", { params: { path: { user_id: user.user.id! } } })).user.displayName).toBe(t.user);
    unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100 } } }));
  }
  const path = { user_id: subject.userId };
  if (expectWritten(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path }, body: { displayName: t.credential } }), fits(t.credential, 200), ["body.displayName"])) {
    const listed = unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path, query: { page_size: 100 } } }));
    expect(listed.list.map((c) => c.credential.displayName)).toContain(t.credential);
  }

  // A subject row suspended, another extended.
  const suspended = newAppId("stored");
  if (expectWritten(await admin.suspend(subject.userId, suspended, { reason: t.suspension }), fits(t.suspension, 500), ["body.reason"])) {
    expect((await readRow(suspended))?.suspension?.reason).toBe(t.suspension);
  }
  const extended = newAppId("stored");
  const extension = { limit: amount("20"), expiresAt, reason: t.extension };
  if (expectWritten(await admin.setExtension(subject.userId, extended, extension), fits(t.extension, 500), ["body.reason"])) {
    expect((await readRow(extended))?.extension?.reason).toBe(t.extension);
  }

  // An app cap with both reasons; the subject has no row of its app.
  const capped = newAppId("stored-cap");
  const controls = { limit: amount("10"), extension: { limit: amount("20"), expiresAt, reason: t.capExtension }, suspension: { reason: t.capSuspension } };
  const capFits = fits(t.capExtension, 500) && fits(t.capSuspension, 500);
  if (expectWritten(await admin.capSet(capped, { controls }), capFits, ["body.controls.extension.reason", "body.controls.suspension.reason"])) {
    expect(unwrap(await admin.capGet(capped)).appCap.controls).toMatchObject({ extension: { reason: t.capExtension }, suspension: { reason: t.capSuspension } });
    unwrap(await admin.capList({ page_size: 100 }));
    unwrap(await admin.effective(subject.userId, capped));
    await decide(capped);
  }

  // The fund policy's default controls; an app with no row and no cap falls to them.
  const defaults = { extension: { limit: amount("20"), expiresAt, reason: t.policyExtension }, suspension: { reason: t.policySuspension } };
  const policyFits = fits(t.policyExtension, 500) && fits(t.policySuspension, 500);
  const policy = await admin.policyUpdate({ fundPolicy: { defaultControls: defaults }, updateMask: "defaultControls" });
  if (expectWritten(policy, policyFits, ["body.fundPolicy.defaultControls.extension.reason", "body.fundPolicy.defaultControls.suspension.reason"])) {
    expect(unwrap(await admin.policyGet()).fundPolicy.defaultControls).toMatchObject({ extension: { reason: t.policyExtension }, suspension: { reason: t.policySuspension } });
    const uncapped = newAppId("stored-default");
    unwrap(await admin.effective(subject.userId, uncapped));
    await decide(uncapped);
  }

  // Spend metadata.
  const unlimited = newAppId("stored-meta");
  unwrap(await admin.setLimit(subject.userId, unlimited, { limit: { unlimited: {} } }));
  const metadata = await spend.authorize({ userId: subject.userId, appId: unlimited, amount: money("1"), metadata: { note: t.metadata } });
  if (expectWritten(metadata, fits(t.metadata, 500), ["body.metadata.note"])) {
    const id = unwrap(metadata).authorization.id;
    expect(unwrap(await spend.get(id)).authorization.metadata).toEqual({ note: t.metadata });
    unwrap(await spend.list({ app_id: unlimited }));
  }

  // An automation whose every CEL expression carries the note; its steps write the step reason.
  const automation = {
    displayName: t.name,
    description: t.description,
    isDraft: false,
    enabled: true,
    triggers: [{ webhook: { hmac: {} } }],
    automationSteps: steps(t.note),
  };
  // Every expression is fitting ASCII and the note's lines: it fits when the note does.
  const automationFits = fits(t.name, 200, 1) && fits(t.description, 2000) && fits(t.note, 4000);
  const celFields = ["skipIfTrueCel", "evaluateExpressions.expressions[0].expression", "unsuspendAppLimit.userIdCel", "unsuspendAppLimit.appIdCel", "suspendAppLimit.userIdCel", "suspendAppLimit.appIdCel", "suspendAppLimit.reasonCel", "setAppLimitExtension.userIdCel", "setAppLimitExtension.appIdCel", "setAppLimitExtension.expiresAtCel", "setAppLimitExtension.reasonCel", "notify.bodyCel"];
  const fields = ["body.automation.displayName", "body.automation.description", ...[0, 1, 2, 3, 4].flatMap((i) => celFields.map((f) => `body.automation.automationSteps[${i}].${f}`))];
  const created = expectWritten(await api.create(automation), automationFits, fields);
  let hook = fallback;
  if (created) {
    const saved = unwrap(await api.get(created.automation.id!)).automation;
    expect([saved.displayName, saved.description, saved.automationSteps?.[0]?.skipIfTrueCel]).toEqual([t.name, t.description, withNote("false", t.note)]);
    unwrap(await api.list({ page_size: 100 }));
    const trigger = webhookTrigger(saved)!;
    hook = { automation: saved, id: saved.id!, listenerId: trigger.listenerId!, url: trigger.url!, secret: created.webhookSecret! };
  }

  // A fund-event trigger's condition carries the note too (a draft: it never runs).
  const condition = withNote("true", t.note);
  const fundTrigger = { displayName: "Fund events", isDraft: true, triggers: [{ fundEvents: { eventTypes: ["FUND_EVENT_TYPE_LIMIT_CHANGED"], conditionCel: condition } }] };
  const fundSaved = expectWritten(await api.create(fundTrigger), fits(t.note, 4000), ["body.automation.triggers[0].fundEvents.conditionCel"]);
  if (fundSaved) expect((unwrap(await api.get(fundSaved.automation.id!)).automation.triggers?.[0] as { fundEvents?: { conditionCel?: string } } | undefined)?.fundEvents?.conditionCel).toBe(condition);

  const [lifted, stepSuspended, stepExtended] = [newAppId("step-lift"), newAppId("step-suspend"), newAppId("step-extend")];
  unwrap(await admin.suspend(subject.userId, lifted, { reason: "to lift" }));
  unwrap(await admin.setLimit(subject.userId, lifted, { limit: amount("10") }));
  const payload = { userId: subject.userId, lifted, suspended: stepSuspended, extended: stepExtended, reason: t.stepReason, until: expiresAt };
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify(payload)));
  const execution = await settled(ts, event.automationExecutionId!);
  expect(unwrap(await api.executions({ automation_id: hook.id, page_size: 100 })).list.map((i) => i.automationExecution.id)).toContain(execution.id);
  unwrap(await api.events(hook.id, { page_size: 100 }));
  expect(execution.stepResults[0]).toMatchObject({ state: "STEP_STATE_DONE", output: { reason: t.stepReason } });
  expect(execution.stepResults[1]?.state).toBe("STEP_STATE_DONE");
  await readRow(lifted);
  if (fits(t.stepReason, 500)) {
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect((await readRow(stepSuspended))?.suspension?.reason).toBe(t.stepReason);
    expect((await readRow(stepExtended))?.extension?.reason).toBe(t.stepReason);
  } else {
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_ERROR");
    expect(execution.stepResults[2]).toMatchObject({ state: "STEP_STATE_ERROR", error: expect.stringMatching(/^suspendAppLimit\.reasonCel: /) });
    expect((await admin.get(subject.userId, stepSuspended)).response.status).toBe(404);
  }
}

describe(`stored text is answered (${testDialect()})`, () => {
  it("the runs write every text field a request body stores (enumerated from the contract)", () => {
    expect([...textFields()].filter((f) => !NOT_STORED_TEXT.has(f)).sort()).toEqual([...WRITTEN].sort());
  });

  it("whatever a write accepts, every read answers 200 within the contract; a write refuses exactly what the text rule refuses", async () => {
    await fc.assert(fc.asyncProperty(texts, writeAndRead), { seed: SEED, numRuns: RUNS, endOnFailure: true });
  }, 120_000);
});
