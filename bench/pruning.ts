// Scenario 11: what removing expired executions costs the webhook intake. A backlog of finished
// executions, past any retention, goes straight into the database; then the HMAC intake runs at
// half its maximum, each run on a server of its own, with nothing due (the retention longer than
// the backlog's age) and with the backlog due, so that the sweep removes it throughout the run.
// The runs go in turn, off, on, on, off, …, so that what else the machine does over the minutes
// weighs on both ways alike; each way's runs are taken together.
import type { Storage } from "../src/storage/connect.js";
import type { Api } from "./api.js";
import type { RequestSpec } from "./load.js";
import type { NodeProcess } from "./processes.js";
import { combineRuns, inTurn, type Measured, type PruningRun } from "./report.js";
import { seedExecutions, type ExecutionSeed } from "./seed.js";

const DAY_MS = 24 * 3_600_000;
/** How old the backlog is: past the default retention (30 days), within the longest (3,650). */
export const BACKLOG_AGE_DAYS = 40;
/** Runs each way. */
const ROUNDS = 2;

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
  /** One run of the intake at `rate` against `target`, not listed in the report by itself. */
  run(key: "pruning-off" | "pruning-on", label: string, request: RequestSpec, target: NodeProcess): Promise<Measured>;
  /** Waits until every execution of the automation has finished. */
  drain(automationId: string): Promise<void>;
  log(line: string): void;
}

const due = async (db: Storage, automationId: string): Promise<number> =>
  Number((await db.db.selectFrom("automation_executions").select((eb) => eb.fn.countAll<number | string>().as("n")).where("automation_id", "=", automationId).executeTakeFirstOrThrow()).n) - 1;

/** Measures both ways; answers each way's runs together (off, then on) and what the sweep removed. */
export async function measurePruning(ctx: PruningContext, template: ExecutionSeed["template"]): Promise<{ off: Measured; on: Measured; run: PruningRun }> {
  const { db, api, rate } = ctx;
  const expired = await api.createWebhookAutomation("bench pruning backlog", { hmac: {} });
  const seedMs = await seedExecutions(db, { automationId: expired.id, count: ctx.backlog, tag: "expired", template, madeBy: new Date(Date.now() - BACKLOG_AGE_DAYS * DAY_MS).toISOString() });
  ctx.log(`pruning: seeded ${ctx.backlog.toLocaleString("en-US")} expired executions in ${Math.round(seedMs)} ms`);
  const label = `11. Webhook intake, HMAC, at half the maximum (${rate} events/s)`;
  const runs = { off: [] as Measured[], on: [] as Measured[] };
  let removed = 0;
  let seconds = 0;
  for (const pruning of inTurn(ROUNDS)) {
    // A sweep a second: with the backlog due, one starts before the load and goes on through it.
    const server = await ctx.start({ EXECUTION_RETENTION_SWEEP_SECONDS: "1", EXECUTION_RETENTION_DAYS: pruning ? "30" : "3650" });
    try {
      const intake = await api.createWebhookAutomation(`bench pruning intake ${runs.off.length + runs.on.length}`, { hmac: {} });
      if (!pruning) {
        runs.off.push(await ctx.run("pruning-off", `${label}, no execution due for removal`, ctx.hmacRequest(intake), server));
      } else {
        const before = await due(db, expired.id);
        const deadline = performance.now() + 30_000;
        while ((await due(db, expired.id)) === before) {
          if (performance.now() > deadline) throw new Error("pruning: the sweep removed nothing within 30 s of the server's start");
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const from = await due(db, expired.id);
        const started = performance.now();
        runs.on.push(await ctx.run("pruning-on", `${label}, removing expired executions`, ctx.hmacRequest(intake), server));
        const left = await due(db, expired.id);
        removed += from - left;
        seconds += (performance.now() - started) / 1000;
        ctx.log(`pruning: removed ${(from - left).toLocaleString("en-US")} while measured, ${left.toLocaleString("en-US")} left`);
      }
      await ctx.drain(intake.id);
    } finally {
      await server.stop();
    }
  }
  return {
    off: combineRuns(runs.off, `${label}, no execution due for removal`),
    on: combineRuns(runs.on, `${label}, removing ${ctx.backlog.toLocaleString("en-US")} expired executions`),
    run: { backlog: ctx.backlog, ageDays: BACKLOG_AGE_DAYS, rounds: ROUNDS, removed, seconds, left: await due(db, expired.id) },
  };
}
