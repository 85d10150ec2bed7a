// The code samples of the reference (x-codeSamples of generated/openapi.yaml, made by
// scripts/code-samples.mjs) run as a reader runs them, each language against a sandbox of its own
// (`npm run sandbox`, seeded): every curl sample by bash with the real curl, every typed-client
// sample typechecked by one tsc run against the client's types and run by tsx. The environment gives
// them what the reader fills in (BASE_URL, TOKEN, CLIENT_ID, CLIENT_SECRET, WEBHOOK_SECRET) and the
// ids of the contract's examples are replaced by the sandbox's. Each must answer the operation's
// documented success status with a body that fits the response schema and has the keys of the 200
// example the docs show.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createApiClient, unwrap, type ApiClient } from "../../src/client/index.js";
import { sendWebhookEvent } from "../../src/client/webhook-sender.js";
import type { SandboxInfo } from "../../scripts/sandbox/report.js";
import { operations, responseErrors } from "../support/contract.js";
import { failedDestination } from "../support/destinations.js";
import { example200, keyDifferences } from "../support/example-keys.js";
import { callerOf, RECORDING_CURL, recordedRequests, runClientProgram, typecheckClientProject, writeClientProject, type Caller } from "../support/doc-code.js";
import { freePort, runToEnd } from "../support/process.js";
import { startSandbox, type RunningSandbox } from "../support/sandbox.js";


interface CodeSample {
  lang: string;
  label: string;
  source: string;
}

const samplesOf = (op: Record<string, any>): CodeSample[] => (op["x-codeSamples"] ?? []) as CodeSample[];

/** The ids the contract's examples use, which a sample must be given the sandbox's instead of. */
const EXAMPLE_IDS = {
  user: "2Qk3mN8rT1vX9yZ0",
  credential: "Cr8dT5vB2nM4kP6q",
  authorization: "Sa4kP9mW2xQ7rT5n",
  automation: "aut_5Xn2Bq8Rk4Lm7Pz1",
  webhookEvent: "3f1c9a52-7d4e-4b8a-9c21-5e6f7a8b9c0d",
  execution: "exe_9Tg3Hs6Wq1Zc4Nv8",
  listener: "wh_7Hq2Lr9sVx3mNc8K",
} as const;

type Ids = Record<keyof typeof EXAMPLE_IDS, string>;

/** The samples in the order they run: the contract's, with the deletes, which end what others read, last. */
const ordered = [...operations].sort((a, b) => Number(a.method === "delete") - Number(b.method === "delete"));

/** A sandbox, and the ids and the caller each operation's sample is to use. */
interface Prepared {
  sandbox: RunningSandbox;
  dir: string;
  env: { BASE_URL: string; WEBHOOK_SECRET: string };
  /** The reader's credential and token: a user's for the operations on the caller's own limits, the super admin's for the rest. */
  callerFor: (operationId: string) => Caller;
  idsFor: (operationId: string) => Ids;
}

/**
 * Starts a sandbox and makes what samples that change state need of their own: a second pending
 * authorization (Capture takes the seeded one, Release this one), a credential to revoke, a failed
 * execution to redrive, an automation whose webhook secret is rotated and that is deleted (the seeded
 * listener keeps accepting the intake's sample), and one with a notify step, as the example of
 * rotating a notification secret shows, not listed first.
 */
async function prepare(): Promise<Prepared> {
  const dir = mkdtempSync(join(tmpdir(), "code-samples-"));
  const sandbox = await startSandbox(await freePort(), join(dir, "sandbox"));
  const { info } = sandbox;
  const user = (displayName: string) => info.users.find((u) => u.displayName === displayName)!;
  const superAdmin = info.users.find((u) => u.role === "ROLE_SUPER_ADMIN")!;
  const admin: ApiClient = createApiClient({ baseUrl: info.baseUrl, credentials: superAdmin });
  const spend = (state: string) => info.authorizations.find((a) => a.state === state)!.id;
  const own = await ownObjects(admin, info, user("Ada User").userId);
  const callers = { admin: await callerOf(info.baseUrl, superAdmin), ada: await callerOf(info.baseUrl, user("Ada User")) };
  const defaults: Ids = {
    user: user("Ada User").userId,
    credential: own.credentialId,
    authorization: spend("SPEND_AUTHORIZATION_STATE_CAPTURED"),
    automation: info.hmac.automationId,
    webhookEvent: own.webhookEventId,
    execution: own.failedExecutionId,
    listener: info.hmac.listenerUrl.slice(info.hmac.listenerUrl.lastIndexOf("/") + 1),
  };
  const overrides: Record<string, Partial<Ids>> = {
    // The example's credential is bound to apps: only an app service's may be.
    "svc.api.iam.v1.CredentialService.Create": { user: user("Billing backend").userId },
    "svc.api.funds.v1.SpendService.Capture": { authorization: spend("SPEND_AUTHORIZATION_STATE_PENDING") },
    "svc.api.funds.v1.SpendService.Release": { authorization: own.pendingId },
    // Sam's row: Ada's is the one Unsuspend and ClearExtension clear, which run after.
    "svc.api.funds.v1.SubjectAppLimitService.Delete": { user: user("Sam User").userId },
    "svc.api.automations.v1.AutomationService.RotateWebhookSecret": { automation: own.automationId },
    "svc.api.automations.v1.AutomationService.RotateNotificationSecret": { automation: own.notifyingAutomationId },
    "svc.api.automations.v1.AutomationService.GetNotificationPublicKey": { automation: own.signingAutomationId },
    "svc.api.automations.v1.AutomationService.DeleteAutomation": { automation: own.automationId },
  };
  return {
    sandbox,
    dir,
    env: { BASE_URL: info.baseUrl, WEBHOOK_SECRET: info.hmac.webhookSecret },
    callerFor: (operationId) => (operationId.startsWith("svc.api.funds.v1.MyFundLimitsService.") ? callers.ada : callers.admin),
    idsFor: (operationId) => ({ ...defaults, ...overrides[operationId] }),
  };
}

async function ownObjects(admin: ApiClient, info: SandboxInfo, userId: string) {
  const pending = unwrap(
    await admin.POST("/api/v1/funds/spend-authorizations", {
      params: { header: { "Idempotency-Key": crypto.randomUUID() } },
      body: { userId, appId: "app-salesforce", amount: { currencyCode: info.currencyCode, units: "1", nanos: 0 }, holdSeconds: 3600 },
    }),
  ).authorization;
  const credential = unwrap(await admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId } }, body: { displayName: "to revoke" } })).credential;
  const parse = { stepName: "parse", evaluateExpressions: { expressions: [{ name: "event", expression: "ctx.trigger.event" }] } };
  const tell = { stepName: "tell", notify: { url: "https://hooks.example.com/limits", bodyCel: '{"type": ctx.trigger.event}', signatureScheme: "NOTIFY_SIGNATURE_SCHEME_HMAC_SHA256" as string } };
  const signed = { stepName: "tell", notify: { ...tell.notify, signatureScheme: "NOTIFY_SIGNATURE_SCHEME_ED25519" } };
  const automation = async (displayName: string, step: typeof parse | typeof tell) =>
    unwrap(await admin.POST("/api/v1/automations", { body: { automation: { displayName, isDraft: false, enabled: true, triggers: [{ webhook: { hmac: {} } }], automationSteps: [step] } } })).automation.id!;
  const rotated = await automation("Rotated and deleted by the samples", parse);
  // Lists are by id, random, and the list's example shows automations of other kinds first: this one is not among them.
  const shown = (example200("svc.api.automations.v1.AutomationService.ListAutomations") as { list: unknown[] }).list.length;
  const listedFirst = async () => unwrap(await admin.GET("/api/v1/automations", {})).list.slice(0, shown).map((a) => a.automation.id);
  /** An automation with `step`, made again until the list's first items, which its example shows (of other kinds), do not hold it. */
  const notListedFirst = async (displayName: string, step: typeof tell) => {
    let id = await automation(displayName, step);
    for (let tries = 1; (await listedFirst()).includes(id); tries++) {
      if (tries === 20) throw new Error(`"${displayName}" was listed first in 20 tries`);
      unwrap(await admin.DELETE("/api/v1/automations/{id}", { params: { path: { id } } }));
      id = await automation(displayName, step);
    }
    return id;
  };
  const notifying = await notListedFirst("Notifies, rotated by the samples", tell);
  const signing = await notListedFirst("Notifies signed with Ed25519, its public key read by the samples", signed);
  // A lost card of a user that does not exist: the seeded listener's suspend step fails.
  const sent = await sendWebhookEvent({ url: info.hmac.listenerUrl, body: JSON.stringify({ event: "card.lost", userId: "no-such-user", appId: "app-github" }), auth: { hmac: { secret: info.hmac.webhookSecret } } });
  const failedExecutionId = (sent.response as { webhookEvent: { automationExecutionId: string } }).webhookEvent.automationExecutionId;
  await vi.waitFor(
    async () => {
      const { state } = unwrap(await admin.GET("/api/v1/automation_executions/{id}", { params: { path: { id: failedExecutionId } } })).automationExecution;
      if (state !== "AUTOMATION_EXECUTION_STATE_ERROR") throw new Error(`the execution to redrive is ${state}`);
    },
    { timeout: 10_000, interval: 100 },
  );
  // The examples' destination, as a notify step's failed attempts record one: no sandbox receiver may stand for that host.
  await failedDestination(`sqlite:${info.database}`, "hooks.example.com:443", new Date().toISOString());
  const events = unwrap(await admin.GET("/api/v1/automations/{id}/webhook-events", { params: { path: { id: info.hmac.automationId } } })).list;
  return { pendingId: pending.id, credentialId: credential.id!, automationId: rotated, notifyingAutomationId: notifying, signingAutomationId: signing, webhookEventId: events[0]!.webhookEvent.eventId, failedExecutionId };
}

/** The sample's source with the sandbox's ids for the examples'. */
const withIds = (source: string, ids: Ids) =>
  Object.entries(EXAMPLE_IDS).reduce((text, [kind, example]) => text.replaceAll(example, ids[kind as keyof Ids]), source);

const successStatus = (op: Record<string, any>) => Number(Object.keys(op.responses as object).find((s) => s.startsWith("2")));

/** What a run answered: the status and the body, or why there is none. */
interface Answer {
  status: number;
  body: unknown;
  failure?: string;
}

/** Runs every curl sample in one bash process, in order, each recording its request in a folder of its own. */
async function runCurlSamples(prepared: Prepared): Promise<Map<string, Answer>> {
  const dir = join(prepared.dir, "curl");
  const script = [RECORDING_CURL];
  ordered.forEach((o, i) => {
    const sample = samplesOf(o.op).find((s) => s.lang === "Shell")!;
    mkdirSync(join(dir, String(i)), { recursive: true });
    writeFileSync(join(dir, `${i}.sh`), withIds(sample.source, prepared.idsFor(o.operationId)));
    const caller = Object.entries(prepared.callerFor(o.operationId)).map(([name, value]) => `${name}='${value}'`);
    script.push(`(RECORDS='${dir}/${i}' ${caller.join(" ")}; . '${dir}/${i}.sh') >/dev/null 2>'${dir}/${i}.err'`);
  });
  const run = await runToEnd("bash", ["-c", script.join("\n")], prepared.env, { timeoutMs: 120_000 });
  expect(run.code, run.out).toBe(0);
  return new Map(
    ordered.map((o, i) => {
      const requests = recordedRequests(join(dir, String(i)));
      const answer = requests.length === 1 && requests[0]!.status > 0 ? { ...requests[0]! } : { status: 0, body: undefined, failure: `${requests.length} requests\n${readFileSync(join(dir, `${i}.err`), "utf8")}` };
      return [o.operationId, answer];
    }),
  );
}

/** Writes every client sample as a file of a TypeScript project that imports the package by its name. */
function writeClientSamples(prepared: Prepared): string {
  const dir = join(prepared.dir, "client");
  writeClientProject(dir);
  ordered.forEach((o, i) => {
    const sample = samplesOf(o.op).find((s) => s.lang === "TypeScript")!;
    writeFileSync(join(dir, `sample-${i}.ts`), withIds(sample.source, prepared.idsFor(o.operationId)));
  });
  return dir;
}

/** Runs each client sample with tsx, in order; a sample prints the answer's body, or fails. */
async function runClientSamples(prepared: Prepared, dir: string): Promise<Map<string, Answer>> {
  const answers = new Map<string, Answer>();
  for (const [i, o] of ordered.entries()) {
    const run = await runClientProgram(dir, `sample-${i}.ts`, { ...prepared.env, ...prepared.callerFor(o.operationId) });
    try {
      if (run.code !== 0) throw new Error(`exit ${run.code}`);
      answers.set(o.operationId, { status: successStatus(o.op), body: JSON.parse(run.stdout) as unknown });
    } catch (error) {
      answers.set(o.operationId, { status: 0, body: undefined, failure: `${String(error)}\n${run.out}` });
    }
  }
  return answers;
}

/** Why an answer is not what the docs show of the operation, if it is not. */
function differences(o: (typeof operations)[number], answer: Answer | undefined): string[] {
  if (!answer) return ["no answer"];
  if (answer.failure) return [answer.failure];
  const status = successStatus(o.op);
  if (answer.status !== status) return [`answered ${answer.status}, the docs show ${status}: ${JSON.stringify(answer.body)}`];
  // Keys of maps that hold data, not fields, differ by what they describe: an audit event's target state (before, after) and a spend's metadata.
  const fieldDifferences = keyDifferences(example200(o.operationId), answer.body).filter((d) => !/\.(before|after|metadata): /.test(d));
  return [...responseErrors(o.operationId, answer.status, answer.body), ...fieldDifferences];
}

let curlSide: Prepared;
let clientSide: Prepared;
let curlAnswers: Map<string, Answer>;
let typecheck: { code: number | null; out: string };
let clientAnswers: Map<string, Answer>;

beforeAll(async () => {
  [curlSide, clientSide] = await Promise.all([prepare(), prepare()]);
  const clientDir = writeClientSamples(clientSide);
  [curlAnswers, typecheck, clientAnswers] = await Promise.all([
    runCurlSamples(curlSide),
    typecheckClientProject(clientDir),
    runClientSamples(clientSide, clientDir),
  ]);
}, 240_000);

afterAll(async () => {
  for (const side of [curlSide, clientSide]) {
    await side?.sandbox.stop();
    if (side) rmSync(side.dir, { recursive: true, force: true });
  }
});

describe("the reference's code samples", () => {
  it("every operation has a curl sample and a typed-client sample", () => {
    const missing = operations.filter((o) => samplesOf(o.op).map((s) => s.label).join() !== "curl,Typed client").map((o) => o.operationId);
    expect(missing).toEqual([]);
  });

  it("the typed-client samples typecheck against the client package's types", () => {
    expect(typecheck.out).toBe("");
    expect(typecheck.code).toBe(0);
  });

  it.each(ordered.map((o) => [o.operationId, o] as const))("%s: the curl sample answers what the docs show", (_, o) => {
    expect(differences(o, curlAnswers.get(o.operationId)), samplesOf(o.op)[0]!.source).toEqual([]);
  });

  it.each(ordered.map((o) => [o.operationId, o] as const))("%s: the typed-client sample answers what the docs show", (_, o) => {
    expect(differences(o, clientAnswers.get(o.operationId)), samplesOf(o.op)[1]!.source).toEqual([]);
  });
});
