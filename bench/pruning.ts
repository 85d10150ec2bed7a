// Scenario 10: what removing expired executions costs the webhook intake. A backlog of finished
// executions, past any retention, goes straight into the database; then the HMAC intake runs at
// half its maximum on a server of its own twice: once with nothing due (the retention longer than
// the backlog's age), once with the backlog due, so that the sweep removes it throughout the run.
import type { Storage } from "../src/storage/connect.js";
import type { Api } from "./api.js";
import type { RequestSpec } from "./load.js";
import type { NodeProcess } from "./processes.js";
import type { Measured, PruningRun, ScenarioKey } from "./report.js";
import { seedFinishedExecutions } from "./seed.js";

const DAY_MS = 24 * 3_600_000;
/** How old the backlog is: past the default retention (30 days), within the longest (3,650). */
export const BACKLOG_AGE_DAYS = 40;

export interface PruningContext {
  db: Storage;
  api: Api;
  /** Expired executions to seed: more than the sweep removes while measured. */
  backlog: number;
  /** Events a second: half the intake's maximum. */
  rate: number;
  hmacRequest(automation: { path: string; secret?: string }): RequestSpec;
  /** Starts a server of its own with this environment besides the bench's. */
  start(env: Record<string, string>): Promise<NodeProcess>;
  measure(key: ScenarioKey, label: string, request: RequestSpec, opts: { target: NodeProcess; rate: number }): Promise<Measured | undefined>;
  /** Waits until every execution of the automation has finished. */
  drain(automationId: string): Promise<void>;
  log(line: string): void;
}

const due = async (db: Storage, automationId: string): Promise<number> =>
  Number((await db.db.selectFrom("automation_executions").select((eb) => eb.fn.countAll<number | string>().as("n")).where("automation_id", "=", automationId).executeTakeFirstOrThrow()).n) - 1;

/** Measures both runs; answers what the one with pruning removed. */
export async function measurePruning(ctx: PruningContext, template: Parameters<typeof seedFinishedExecutions>[1]["template"]): Promise<PruningRun> {
  const { db, api, rate } = ctx;
  const expired = await api.createWebhookAutomation("bench pruning backlog", { hmac: {} });
  const seedMs = await seedFinishedExecutions(db, { automationId: expired.id, count: ctx.backlog, template, finishedBy: new Date(Date.now() - BACKLOG_AGE_DAYS * DAY_MS).toISOString() });
  ctx.log(`pruning: seeded ${ctx.backlog.toLocaleString("en-US")} expired executions in ${Math.round(seedMs)} ms`);
  // A sweep a second: the one with the backlog due starts before the load and goes on through it.
  const sweepEverySecond = { EXECUTION_RETENTION_SWEEP_SECONDS: "1" };
  const label = `10. Webhook intake, HMAC, at half the maximum (${rate} events/s)`;

  const idle = await ctx.start({ ...sweepEverySecond, EXECUTION_RETENTION_DAYS: "3650" });
  try {
    const intake = await api.createWebhookAutomation("bench pruning intake, nothing due", { hmac: {} });
    await ctx.measure("pruning-off", `${label}, no execution due for removal`, ctx.hmacRequest(intake), { target: idle, rate });
    await ctx.drain(intake.id);
  } finally {
    await idle.stop();
  }

  const pruning = await ctx.start({ ...sweepEverySecond, EXECUTION_RETENTION_DAYS: "30" });
  try {
    const intake = await api.createWebhookAutomation("bench pruning intake, backlog due", { hmac: {} });
    const before = await due(db, expired.id);
    const deadline = performance.now() + 30_000;
    while ((await due(db, expired.id)) === before) {
      if (performance.now() > deadline) throw new Error("pruning: the sweep removed nothing within 30 s of the server's start");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const from = await due(db, expired.id);
    const started = performance.now();
    await ctx.measure("pruning-on", `${label}, removing ${ctx.backlog.toLocaleString("en-US")} expired executions`, ctx.hmacRequest(intake), { target: pruning, rate });
    const left = await due(db, expired.id);
    const run = { backlog: ctx.backlog, ageDays: BACKLOG_AGE_DAYS, removed: from - left, seconds: (performance.now() - started) / 1000, left };
    ctx.log(`pruning: removed ${run.removed.toLocaleString("en-US")} while measured (${Math.round(run.removed / run.seconds)}/s), ${left.toLocaleString("en-US")} left`);
    await ctx.drain(intake.id);
    return run;
  } finally {
    await pruning.stop();
  }
}
