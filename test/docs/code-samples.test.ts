// The code samples of the reference (x-codeSamples of generated/openapi.yaml) run as printed, twice
// in a row, each language against a seeded sandbox of its own: curl by bash with the real curl, the
// typed client typechecked by one tsc run and run by tsx. Only the variables the introduction lists
// are set (the sandbox's ids among them). Each run must answer the documented success status with a
// body that fits the response schema and has the keys of the 200 example; a second run may be
// refused only where SECOND_RUN_REFUSED says so.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createApiClient, errorReason, unwrap, type ApiClient } from "../../src/client/index.js";
import { sendWebhookEvent } from "../../src/client/webhook-sender.js";
import type { SandboxInfo } from "../../scripts/sandbox/report.js";
import { isSandboxOnly } from "../../src/http/sandbox-routes.js";
import { contract, operations, responseErrors } from "../support/contract.js";
import { failedDestination } from "../support/destinations.js";
import { example200, keyDifferences } from "../support/example-keys.js";
import { callerOf, RECORDING_CURL, recordedRequests, runClientProgram, typecheckClientProject, writeClientProject, type Caller } from "../support/doc-code.js";
import { freePort, onPath, runToEnd } from "../support/process.js";
import { startSandbox, type RunningSandbox } from "../support/sandbox.js";


interface CodeSample {
  lang: string;
  label: string;
  source: string;
}

const samplesOf = (op: Record<string, any>): CodeSample[] => (op["x-codeSamples"] ?? []) as CodeSample[];

/** The variables of the ids the samples read (the introduction's table lists them with the others). */
type Ids = Record<"USER_ID" | "APP_ID" | "CREDENTIAL_ID" | "AUTHORIZATION_ID" | "AUTOMATION_ID" | "AUTOMATION_EXECUTION_ID" | "EVENT_ID" | "DESTINATION_ID" | "LISTENER_ID", string>;

/**
 * The operations whose second run, with the same variables, is refused: the first ended what they
 * act on, or made what must be unique. The introduction says so; anything else must succeed twice.
 */
const SECOND_RUN_REFUSED: Record<string, { status: number; reason: string }> = {
  "svc.api.iam.v1.UserService.Create": { status: 409, reason: "EMAIL_TAKEN" },
  "svc.api.funds.v1.SubjectAppLimitService.Delete": { status: 404, reason: "ROW_NOT_FOUND" },
  "svc.api.funds.v1.MyFundLimitsService.ClearLimit": { status: 404, reason: "ROW_NOT_FOUND" },
  "svc.api.funds.v1.AppCapService.Delete": { status: 404, reason: "APP_CAP_NOT_FOUND" },
  "svc.api.funds.v1.SpendService.Capture": { status: 409, reason: "AUTHORIZATION_NOT_PENDING" },
  "svc.api.automations.v1.AutomationService.DeleteAutomation": { status: 404, reason: "AUTOMATION_NOT_FOUND" },
  "svc.api.automations.v1.AutomationExecutionService.Redrive": { status: 409, reason: "EXECUTION_ALREADY_REDRIVEN" },
};

/**
 * The samples in the order they run: the contract's, with the deletes, which end what others read,
 * after the rest, and the sandbox's own operations last (Advance moves the clock every other reads).
 */
const rank = (o: (typeof operations)[number]) => (isSandboxOnly(o.operationId) ? 2 : o.method === "delete" ? 1 : 0);
const ordered = [...operations].sort((a, b) => rank(a) - rank(b));

/** A sandbox, and the ids and the caller each operation's sample is to use. */
interface Prepared {
  sandbox: RunningSandbox;
  dir: string;
  env: { BASE_URL: string };
  /** The reader's credential and token: a user's for the operations on the caller's own limits, the super admin's for the rest. */
  callerFor: (operationId: string) => Caller;
  idsFor: (operationId: string) => Ids;
  /** WEBHOOK_SECRET: the secret of the listener LISTENER_ID names. */
  secretFor: (operationId: string) => { WEBHOOK_SECRET: string };
}

/** The intake operations of senders with their own schemes, each posting to the sandbox's listener of its kind (the others, to its HMAC listener). */
const INTAKE_KINDS: Record<string, "standardWebhooks" | "github" | "stripe"> = {
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStandardWebhook": "standardWebhooks",
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveGithubWebhook": "github",
  "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStripeWebhook": "stripe",
};

/** A listener's id: the segment after `/incoming/` of its URL, which a kind's suffix may follow. */
const listenerIdOf = (url: string) => /\/incoming\/([^/]+)/.exec(url)![1]!;

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
  const defaults: Omit<Ids, "LISTENER_ID"> = {
    USER_ID: user("Ada User").userId,
    APP_ID: "app-salesforce",
    CREDENTIAL_ID: own.credentialId,
    AUTHORIZATION_ID: spend("SPEND_AUTHORIZATION_STATE_CAPTURED"),
    AUTOMATION_ID: info.hmac.automationId,
    AUTOMATION_EXECUTION_ID: own.failedExecutionId,
    EVENT_ID: own.webhookEventId,
    DESTINATION_ID: own.destinationId,
  };
  const listenerFor = (operationId: string) => info[INTAKE_KINDS[operationId] ?? "hmac"];
  const overrides: Record<string, Partial<Ids>> = {
    // The example's credential is bound to apps: only an app service's may be.
    "svc.api.iam.v1.CredentialService.Create": { USER_ID: user("Billing backend").userId },
    "svc.api.funds.v1.SpendService.Capture": { AUTHORIZATION_ID: spend("SPEND_AUTHORIZATION_STATE_PENDING") },
    "svc.api.funds.v1.SpendService.Release": { AUTHORIZATION_ID: own.pendingId },
    // Sam's row: Ada's is the one Unsuspend and ClearExtension clear, which run after.
    "svc.api.funds.v1.SubjectAppLimitService.Delete": { USER_ID: user("Sam User").userId },
    "svc.api.automations.v1.AutomationService.RotateWebhookSecret": { AUTOMATION_ID: own.automationId },
    "svc.api.automations.v1.AutomationService.RotateNotificationSecret": { AUTOMATION_ID: own.notifyingAutomationId },
    "svc.api.automations.v1.AutomationService.GetNotificationPublicKey": { AUTOMATION_ID: own.signingAutomationId },
    "svc.api.automations.v1.AutomationService.DeleteAutomation": { AUTOMATION_ID: own.automationId },
  };
  return {
    sandbox,
    dir,
    env: { BASE_URL: info.baseUrl },
    callerFor: (operationId) => (operationId.startsWith("svc.api.funds.v1.MyFundLimitsService.") ? callers.ada : callers.admin),
    idsFor: (operationId) => ({ ...defaults, LISTENER_ID: listenerIdOf(listenerFor(operationId).listenerUrl), ...overrides[operationId] }),
    secretFor: (operationId) => ({ WEBHOOK_SECRET: listenerFor(operationId).webhookSecret }),
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
  const destinationId = await failedDestination(`sqlite:${info.database}`, "hooks.example.com:443", new Date().toISOString());
  const events = unwrap(await admin.GET("/api/v1/automations/{id}/webhook-events", { params: { path: { id: info.hmac.automationId } } })).list;
  return { pendingId: pending.id, credentialId: credential.id!, automationId: rotated, notifyingAutomationId: notifying, signingAutomationId: signing, webhookEventId: events[0]!.webhookEvent.eventId, failedExecutionId, destinationId };
}

const successStatus = (op: Record<string, any>) => Number(Object.keys(op.responses as object).find((s) => s.startsWith("2")));

/** What a run answered: the status and the body, or why there is none. */
interface Answer {
  status: number;
  body: unknown;
  failure?: string;
}

/** What a sample's two runs answered, and for curl the TOKEN the shell held after each. */
interface Runs {
  answers: [Answer, Answer];
  tokens?: [string, string];
}

const RUNS = [1, 2] as const;

/** The variables a sample of `operationId` runs with: the caller's credential and token, the ids, and the listener's secret. */
const variablesFor = (prepared: Prepared, operationId: string) => ({ ...prepared.callerFor(operationId), ...prepared.idsFor(operationId), ...prepared.secretFor(operationId) });

/**
 * Runs every curl sample twice, as printed, in one bash process, in order: each run sourced in a
 * subshell of its own with the variables set, recording its request in a folder of its own.
 */
async function runCurlSamples(prepared: Prepared): Promise<Map<string, Runs>> {
  const dir = join(prepared.dir, "curl");
  const script = [RECORDING_CURL];
  mkdirSync(dir, { recursive: true });
  ordered.forEach((o, i) => {
    const sample = samplesOf(o.op).find((s) => s.lang === "Shell")!;
    writeFileSync(join(dir, `${i}.sh`), sample.source);
    const variables = Object.entries(variablesFor(prepared, o.operationId)).map(([name, value]) => `${name}='${value}'`);
    for (const run of RUNS) {
      const records = join(dir, `${i}-${run}`);
      mkdirSync(records, { recursive: true });
      script.push(`(RECORDS='${records}' ${variables.join(" ")}; . '${dir}/${i}.sh'; printf %s "$TOKEN" > '${records}/token') >/dev/null 2>'${records}.err'`);
    }
  });
  const run = await runToEnd("bash", ["-c", script.join("\n")], prepared.env, { timeoutMs: 180_000 });
  expect(run.code, run.out).toBe(0);
  const answerOf = (records: string): Answer => {
    const requests = recordedRequests(records);
    return requests.length === 1 && requests[0]!.status > 0 ? { ...requests[0]! } : { status: 0, body: undefined, failure: `${requests.length} requests\n${readFileSync(`${records}.err`, "utf8")}` };
  };
  return new Map(
    ordered.map((o, i) => {
      const records = RUNS.map((n) => join(dir, `${i}-${n}`));
      return [o.operationId, { answers: [answerOf(records[0]!), answerOf(records[1]!)], tokens: [readFileSync(join(records[0]!, "token"), "utf8"), readFileSync(join(records[1]!, "token"), "utf8")] }];
    }),
  );
}

/** Writes every client sample as a file of a TypeScript project that imports the package by its name. */
function writeClientSamples(prepared: Prepared): string {
  const dir = join(prepared.dir, "client");
  writeClientProject(dir);
  ordered.forEach((o, i) => {
    const sample = samplesOf(o.op).find((s) => s.lang === "TypeScript")!;
    writeFileSync(join(dir, `sample-${i}.ts`), sample.source);
  });
  return dir;
}

/** Runs each client sample twice with tsx, in order; a sample prints the answer's body, or fails (unwrap's error names the status and reason). */
async function runClientSamples(prepared: Prepared, dir: string): Promise<Map<string, Runs>> {
  const runs = new Map<string, Runs>();
  for (const [i, o] of ordered.entries()) {
    const answers: Answer[] = [];
    for (const _ of RUNS) {
      const run = await runClientProgram(dir, `sample-${i}.ts`, { ...prepared.env, ...variablesFor(prepared, o.operationId) });
      try {
        if (run.code !== 0) throw new Error(`exit ${run.code}`);
        answers.push({ status: successStatus(o.op), body: JSON.parse(run.stdout) as unknown });
      } catch (error) {
        answers.push({ status: 0, body: undefined, failure: `${String(error)}\n${run.out}` });
      }
    }
    runs.set(o.operationId, { answers: [answers[0]!, answers[1]!] });
  }
  return runs;
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

/** Why a sample's runs are not what they must be: each as the docs show, or the second refused as SECOND_RUN_REFUSED says. */
function runDifferences(o: (typeof operations)[number], runs: Runs | undefined): string[] {
  if (!runs) return ["no runs"];
  const [first, second] = runs.answers;
  const refused = SECOND_RUN_REFUSED[o.operationId];
  if (!refused) return [...differences(o, first), ...differences(o, second).map((d) => `second run: ${d}`)];
  // curl's answer holds the body; the typed client's failure, unwrap's message ("404 AUTOMATION_NOT_FOUND: ...").
  const said = second.failure ?? `${second.status} ${errorReason(second.body)}`;
  return [...differences(o, first), ...(said.includes(`${refused.status} ${refused.reason}`) ? [] : [`the second run must be refused with ${refused.status} ${refused.reason}: ${said}`])];
}

/** The variables the introduction's "Code samples" table lists (the first column's names). */
const documentedVariables = (): string[] => {
  const section = (contract.info.description as string).split(/^## /m).find((s) => s.startsWith("Code samples\n")) ?? "";
  return [...section.matchAll(/^\| (.+?) \|/gm)].flatMap(([, cell]) => [...cell!.matchAll(/`([A-Z][A-Z_]*)`/g)].map(([, name]) => name!)).sort();
};

/** The environment variables a sample reads: `$NAME` in shell, `process.env.NAME` in TypeScript. */
const variablesRead = (sample: CodeSample): string[] => [...sample.source.matchAll(sample.lang === "Shell" ? /\$\{?([A-Z][A-Z_]*)/g : /process\.env\.([A-Z][A-Z_]*)/g)].map(([, name]) => name!);

/** What the curl samples run besides bash, by Debian package (.ci/run installs them): without one, they are skipped, saying so. */
const CURL_TOOLS = { curl: "curl", jq: "jq", openssl: "openssl", uuidgen: "uuid-runtime" };
const missingTools = Object.keys(CURL_TOOLS).filter((tool) => !onPath(tool));
const curlSkipped = missingTools.length > 0;
if (curlSkipped) {
  const packages = missingTools.map((tool) => CURL_TOOLS[tool as keyof typeof CURL_TOOLS]);
  console.warn(`SKIPPED: the reference's curl samples: ${missingTools.join(", ")} not on PATH (apt-get install ${packages.join(" ")})`);
}

let curlSide: Prepared | undefined;
let clientSide: Prepared;
let curlRuns: Map<string, Runs>;
let typecheck: { code: number | null; out: string };
let clientRuns: Map<string, Runs>;

// Each typed-client sample runs twice, a tsx process each, one after the other: minutes on a busy machine.
beforeAll(async () => {
  [curlSide, clientSide] = await Promise.all([curlSkipped ? undefined : prepare(), prepare()]);
  const clientDir = writeClientSamples(clientSide);
  [curlRuns, typecheck, clientRuns] = await Promise.all([
    curlSide ? runCurlSamples(curlSide) : new Map<string, Runs>(),
    typecheckClientProject(clientDir),
    runClientSamples(clientSide, clientDir),
  ]);
}, 600_000);

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

  it("read only the variables the introduction lists, and it lists none they do not read", () => {
    const read = new Set(operations.flatMap((o) => samplesOf(o.op).flatMap(variablesRead)));
    expect(documentedVariables()).toEqual([...read].sort());
  });

  it.skipIf(curlSkipped)("the token's curl sample leaves TOKEN set to the token it got, at each run", () => {
    const runs = curlRuns.get("svc.api.iam.v1.TokenService.CreateToken")!;
    expect(runs.tokens!.map((token, i) => token === (runs.answers[i]!.body as { access_token?: string }).access_token)).toEqual([true, true]);
    expect(runs.tokens![0]).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  it.skipIf(curlSkipped).each(ordered.map((o) => [o.operationId, o] as const))("%s: the curl sample, run twice as printed, answers what the docs show", (_, o) => {
    expect(runDifferences(o, curlRuns.get(o.operationId)), samplesOf(o.op)[0]!.source).toEqual([]);
  });

  it.each(ordered.map((o) => [o.operationId, o] as const))("%s: the typed-client sample, run twice as printed, answers what the docs show", (_, o) => {
    expect(runDifferences(o, clientRuns.get(o.operationId)), samplesOf(o.op)[1]!.source).toEqual([]);
  });
});
