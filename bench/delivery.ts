// Scenarios 14 to 16: notifications and fairness. 14: a `notify` step whose receiver never answers
// must not hold up another automation's steady flow of events. 15: a fresh event of one automation
// behind another's backlog of pending executions must finish within a second, whether the intake
// handed it to the worker or the worker claimed it among the backlog. 16: the HMAC intake at half
// its maximum while a fifth of the notifications its events send are answered 503 (parked, tried
// again), against the same without. docs/benchmarks.md, "Notifications and fairness".
import { randomUUID } from "node:crypto";
import { newExecution } from "../src/automations/executions.js";
import type { Storage } from "../src/storage/connect.js";
import { hmacHeaders, type Api } from "./api.js";
import type { RequestSpec } from "./load.js";
import { startNotificationReceiver } from "./notification-receiver.js";
import type { NodeProcess } from "./processes.js";
import { combineRuns, inTurn, type BacklogFairness, type ExecutionWait, type Measured, type ParkedIntake, type ScenarioKey, type SilentNotify } from "./report.js";
import { seedExecutions } from "./seed.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Scenario 14: events queued to the silent receiver's automation, and the steady flow's rate (events a second). */
const SILENT_EVENTS = 300;
const FLOW_RATE = 200;

export interface DeliverySizes {
  /** Scenario 14: how long the steady flow lasts (past an attempt's timeout, so that the silent attempts time out and park meanwhile). */
  flowSeconds: number;
  /** Scenario 15: pending executions seeded, and rounds (a fresh event each way a round). */
  backlog: number;
  backlogRounds: number;
  /** Scenario 16: runs each way. */
  parkedRounds: number;
}

/** A server with a database of its own, with NOTIFICATION_ALLOW_INSECURE=1 (the receiver is on 127.0.0.1). */
export interface IsolatedServer {
  server: NodeProcess;
  db: Storage;
  api: Api;
  /** Stops the server and drops its database. */
  stop(): Promise<void>;
}

export interface DeliveryContext {
  /** The main server's database and API (scenario 15 runs on it). */
  db: Storage;
  api: Api;
  /**
   * Starts a server with this environment besides the bench's, on a database of its own: no other
   * server of the run takes its parked executions when due (under its own notification settings).
   */
  startIsolated(env: Record<string, string>): Promise<IsolatedServer>;
  /** HMAC intake against `target`; `listed`: a row of the report by itself. */
  run(key: ScenarioKey, label: string, request: RequestSpec, target: NodeProcess, opts: { rate?: number; durationSeconds?: number; warmupSeconds?: number; listed?: boolean }): Promise<Measured>;
  hmacRequest(automation: { path: string; secret?: string }): RequestSpec;
  body: string;
  /** Waits until the automation's executions (in `storage`, the main server's database by default) finished, and answers accepted → done of each. */
  executionsOf(automationId: string, what: string, storage?: Storage): Promise<ExecutionWait>;
  drain(automationId: string): Promise<void>;
  log(line: string): void;
}

const notifyStep = (url: string) => ({ stepName: "tell", notify: { url, bodyCel: '{"type": "card.lost", "n": ctx.trigger.n}' } });

/** Sends one signed event to the automation's listener; answers its event id. */
async function sendEvent(origin: string, automation: { path: string; secret?: string }, body: string): Promise<string> {
  const eventId = randomUUID();
  const r = await fetch(origin + automation.path, { method: "POST", headers: hmacHeaders(automation.secret!, eventId, body), body });
  if (r.status !== 200) throw new Error(`an event to ${automation.path} answered ${r.status}: ${await r.text()}`);
  return eventId;
}

const unfinished = async (db: Storage, automationId: string): Promise<number> =>
  Number((await db.db.selectFrom("automation_executions").select((eb) => eb.fn.countAll<number | string>().as("n")).where("automation_id", "=", automationId).where("completed_at", "is", null).executeTakeFirstOrThrow()).n);

/** The automation's executions by state. */
async function states(db: Storage, automationId: string): Promise<Record<string, number>> {
  const rows = await db.db.selectFrom("automation_executions").select((eb) => ["state", eb.fn.countAll<number | string>().as("n")]).where("automation_id", "=", automationId).groupBy("state").orderBy("state").execute();
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

/** Scenario 14, on a server of its own. */
export async function measureSilentNotify(ctx: DeliveryContext, sizes: DeliverySizes): Promise<SilentNotify> {
  const receiver = await startNotificationReceiver();
  const { server, db, api, stop } = await ctx.startIsolated({});
  try {
    const silent = await api.createWebhookAutomation("bench silent receiver", { hmac: {} }, [notifyStep(receiver.url("/silent"))]);
    const flow = await api.createWebhookAutomation("bench steady flow", { hmac: {} });
    for (let sent = 0; sent < SILENT_EVENTS; sent += 20) await Promise.all(Array.from({ length: Math.min(20, SILENT_EVENTS - sent) }, () => sendEvent(server.url, silent, ctx.body)));
    const label = `14. Webhook intake, HMAC, a steady ${FLOW_RATE} events/s beside ${SILENT_EVENTS} notifications to a receiver that never answers`;
    await ctx.run("notify-silent", label, ctx.hmacRequest(flow), server, { rate: FLOW_RATE, durationSeconds: sizes.flowSeconds, warmupSeconds: 0, listed: true });
    const silentStates = await states(db, silent.id);
    const wait = await ctx.executionsOf(flow.id, "scenario 14's steady flow", db);
    ctx.log(`silent receiver: its automation's executions when the flow ended: ${JSON.stringify(silentStates)}`);
    return { events: SILENT_EVENTS, states: silentStates, flow: { ...wait, rate: FLOW_RATE } };
  } finally {
    await stop();
    await receiver.close();
  }
}

/**
 * Scenario 15, on the main server. Each round seeds the backlog as pending executions, waits until
 * the worker has finished a tenth of it, then starts a fresh execution each way: a webhook event,
 * which the intake hands straight to its worker, and a fund event (a suspension), whose execution
 * the change inserts pending and the worker claims from the database, where the backlog waits.
 */
export async function measureBacklogFairness(ctx: DeliveryContext, sizes: DeliverySizes, subject: string): Promise<BacklogFairness> {
  const { db, api } = ctx;
  const hog = await api.createWebhookAutomation("bench backlog", { hmac: {} });
  const webhook = await api.createWebhookAutomation("bench fresh webhook event", { hmac: {} });
  const { automation: onSuspension } = await api.call<{ automation: { id: string } }>("POST", "/api/v1/automations", {
    automation: {
      displayName: "bench fresh fund event",
      isDraft: false,
      triggers: [{ fundEvents: { eventTypes: ["FUND_EVENT_TYPE_LIMIT_SUSPENDED"] } }],
      automationSteps: [{ stepName: "app", evaluateExpressions: { expressions: [{ name: "app", expression: "ctx.trigger.appId" }] } }],
    },
  });
  const { steps } = await db.db.selectFrom("automations").select("steps").where("id", "=", hog.id).executeTakeFirstOrThrow();
  const { context, step_results } = newExecution(hog.id, "", JSON.parse(ctx.body), steps, new Date().toISOString());
  const template = { context, steps, step_results, state: "AUTOMATION_EXECUTION_STATE_PENDING" };
  const paths = [
    { path: "a webhook event, handed to the worker by the intake", rounds: [] as BacklogFairness["paths"][number]["rounds"] },
    { path: "a fund event, its execution claimed from the database", rounds: [] as BacklogFairness["paths"][number]["rounds"] },
  ] as const;
  /** The execution's accepted → done once it is done, and the backlog's executions not done by then. */
  const finished = async (where: { eventId: string } | { automationId: string; after: string }) => {
    const deadline = performance.now() + 60_000;
    for (;;) {
      let query = db.db.selectFrom("automation_executions").select(["created_at", "completed_at"]);
      query = "eventId" in where ? query.where("event_id", "=", where.eventId) : query.where("automation_id", "=", where.automationId).where("created_at", ">", where.after);
      const row = await query.executeTakeFirst();
      if (row?.completed_at) {
        const left = await db.db.selectFrom("automation_executions").select((eb) => eb.fn.countAll<number | string>().as("n")).where("automation_id", "=", hog.id).where((eb) => eb.or([eb("completed_at", "is", null), eb("completed_at", ">", row.completed_at)])).executeTakeFirstOrThrow();
        return { waitMs: Date.parse(row.completed_at) - Date.parse(row.created_at), backlogLeft: Number(left.n) };
      }
      if (performance.now() > deadline) throw new Error("scenario 15: a fresh execution was not done within 60 s");
      await sleep(10);
    }
  };
  try {
    for (let round = 0; round < sizes.backlogRounds; round++) {
      await seedExecutions(db, { automationId: hog.id, count: sizes.backlog, tag: `backlog${round}`, template, madeBy: new Date().toISOString() });
      // The worker finds the seeded rows at its next poll: the fresh events go once it is well into them.
      while ((await unfinished(db, hog.id)) > sizes.backlog * 0.9) await sleep(10);
      const before = new Date().toISOString();
      const [eventId] = await Promise.all([sendEvent(api.origin, webhook, ctx.body), api.call("POST", `/api/v1/funds/subject-app-limits/${subject}/fairness-${round}/suspension`, { reason: "bench" })]);
      const [handed, claimed] = await Promise.all([finished({ eventId }), finished({ automationId: onSuspension.id, after: before })]);
      paths[0].rounds.push(handed);
      paths[1].rounds.push(claimed);
      ctx.log(`backlog fairness, round ${round + 1}: handed over ${handed.waitMs} ms (${handed.backlogLeft} of the backlog left), claimed ${claimed.waitMs} ms (${claimed.backlogLeft} left)`);
      await ctx.drain(hog.id);
    }
  } finally {
    // A later suspension would fire it.
    await api.call("DELETE", `/api/v1/automations/${onSuspension.id}`);
  }
  return { backlog: sizes.backlog, paths: paths.map((p) => ({ path: p.path, rounds: p.rounds })) };
}

/**
 * Scenario 16, on a server of its own: its maximum with every event notifying, then runs without
 * parking and with, in turn, at half that.
 */
export async function measureParkedIntake(ctx: DeliveryContext, sizes: DeliverySizes): Promise<{ off: Measured; on: Measured; parkedIntake: ParkedIntake }> {
  const receiver = await startNotificationReceiver();
  // No cap on requests in flight to the receiver (as many as the worker's runs): only the 503s park.
  // Nor a circuit: a fifth answered 503 at random makes runs of 5 failures in a row (the default
  // NOTIFY_CIRCUIT_FAILURES) over thousands of attempts, and each open circuit holds every parked
  // execution for its cool-down, which is the circuit's cost, not parking's.
  const { server, db, api, stop } = await ctx.startIsolated({ NOTIFY_RETRY_SCHEDULE: "1s,2s,4s", NOTIFY_MAX_IN_FLIGHT_PER_DESTINATION: "128", NOTIFY_CIRCUIT_FAILURES: "1000" });
  try {
    // Half of scenario 1's rate may be more than this server can take: each event's execution also sends a request.
    const probe = await api.createWebhookAutomation("bench notifying intake", { hmac: {} }, [notifyStep(receiver.url("/flaky"))]);
    const maximum = (await ctx.run("intake-parked-off", "16. Webhook intake, HMAC, each event notifying, at its maximum", ctx.hmacRequest(probe), server, {})).result.requestsPerSecond;
    await ctx.executionsOf(probe.id, "scenario 16 at its maximum", db);
    const rate = Math.max(1, Math.round(maximum / 2));
    const label = `16. Webhook intake, HMAC, each event notifying, at half its maximum (${rate} events/s)`;
    const runs = { off: [] as Measured[], on: [] as Measured[] };
    const parked: ParkedIntake = { maximum, rounds: sizes.parkedRounds, requests: 0, unavailable: 0, executions: 0, notDone: 0 };
    for (const failing of inTurn(sizes.parkedRounds)) {
      const automation = await api.createWebhookAutomation(`bench parked intake ${runs.off.length + runs.on.length}`, { hmac: {} }, [notifyStep(receiver.url("/flaky"))]);
      receiver.setFailing(failing);
      receiver.takeCounts();
      const m = await ctx.run(failing ? "intake-parked-on" : "intake-parked-off", label, ctx.hmacRequest(automation), server, { rate });
      // The parked ones too: retried within 7 s (and their jitter) of the run's end.
      const { count: executions, notDone: failed } = await ctx.executionsOf(automation.id, `scenario 16, ${failing ? "a fifth answered 503" : "every notification answered 200"}`, db);
      const notDone = failed?.count ?? 0;
      const received = receiver.takeCounts();
      ctx.log(`scenario 16: the receiver answered ${received.requests} requests (${received.unavailable} 503) for ${executions} executions`);
      if (failing) {
        parked.requests += received.requests;
        parked.unavailable += received.unavailable;
        parked.executions += executions;
        parked.notDone += notDone;
      }
      (failing ? runs.on : runs.off).push(m);
    }
    return { off: combineRuns(runs.off, `${label}, every notification answered 200`), on: combineRuns(runs.on, `${label}, a fifth answered 503 (parked, retried at 1s, 2s, 4s)`), parkedIntake: parked };
  } finally {
    await stop();
    await receiver.close();
  }
}
