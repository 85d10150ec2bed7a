// Bounded storage of executions, through the API: finished executions are gone from
// ListAutomationExecutions and GetAutomationExecution once EXECUTION_RETENTION_DAYS have passed
// since they finished, or once past an automation's newest EXECUTION_RETENTION_COUNT; recent,
// pending, running and leased ones stay, and so does each automation's newest (its
// lastExecutedAt); two instances sweeping at once remove each execution once. Time is the test's
// clock; the sweeps are run by the test, except where the timer's is the point.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { createLogger } from "../../../src/core/logger.js";
import { newExecution } from "../../../src/automations/executions.js";
import { openStorage } from "../../../src/storage/connect.js";
import { startServer, type RunningServer } from "../../../src/server.js";
import { testDialect } from "../../support/database.js";
import { freePort } from "../../support/process.js";
import { BOOTSTRAP, logCapture, startTestServer, type TestServer } from "../../support/server.js";
import { expectError } from "../limits/helpers.js";
import { automationsApi, createHooked, evaluateStep, executionsOf, expectAccepted, newEventId, sendHmac, type Hooked } from "../webhooks/helpers.js";

const SECOND = 1000;
const DAY = 24 * 3_600_000;
/** Small batches, no pause: every sweep here goes through several batches at once. */
const PACE = { batchRows: 2, minPauseMs: 0, pauseFactor: 0 };

const hooked = (ts: TestServer) => createHooked(ts, { steps: [evaluateStep("s", { n: "ctx.trigger.n" })] });

/** Delivers `count` events to the hook, a second of the clock apart, each run before the clock moves (it finishes when it was made); answers the executions' ids in order. */
async function deliver(ts: TestServer, hook: Hooked, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    ts.clock.advance(SECOND);
    ids.push(expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify({ n }))).automationExecutionId!);
    await ts.server.worker.idle();
  }
  return ids;
}

const idsOf = async (ts: TestServer, automationId: string) => (await executionsOf(ts.admin, automationId)).map((e) => e.id).sort();

describe(`by age, on ${testDialect()}: EXECUTION_RETENTION_DAYS (30 by default) after an execution finished`, () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({}, undefined, { retentionPace: PACE });
  });
  afterAll(async () => ts?.stop());

  it("removes finished executions once 30 days have passed since they finished; keeps recent, running and leased ones, and each automation's newest", async () => {
    const t0 = ts.clock.now();
    const a = await hooked(ts);
    const b = await hooked(ts);
    const c = await hooked(ts);
    const aOld = await deliver(ts, a, 5); // finished at t0 + 1 s ... t0 + 5 s
    const bOld = await deliver(ts, b, 2);
    const cOld = await deliver(ts, c, 2);

    // Two runs of automation a that another instance holds, made at t0 + 10 s: one whose lease
    // lapses after 5 days (its instance died; this one resumes and finishes it then), one leased
    // for 100 days (still running throughout).
    const storage = await openStorage(loadConfig({ DATABASE_URL: ts.databaseUrl }).database);
    const running = async (leaseMs: number) => {
      const { steps } = await storage.db.selectFrom("automations").select("steps").where("id", "=", a.id).executeTakeFirstOrThrow();
      const row = newExecution(a.id, newEventId(), { trigger: { n: 99 } }, steps, new Date(t0 + 10 * SECOND).toISOString(), new Date(t0 + leaseMs).toISOString());
      await storage.db.insertInto("automation_executions").values(row).execute();
      return row.id;
    };
    const resumed = await running(5 * DAY);
    const leased = await running(100 * DAY);
    await storage.close();
    ts.clock.set(t0 + 5 * DAY + 20 * SECOND);
    ts.server.worker.notify();
    await ts.server.worker.idle();
    const resumedDone = unwrap(await automationsApi(ts.admin).execution(resumed)).automationExecution;
    expect(resumedDone).toMatchObject({ state: "AUTOMATION_EXECUTION_STATE_DONE", completedAt: new Date(t0 + 5 * DAY + 20 * SECOND).toISOString() });

    ts.clock.set(t0 + 10 * DAY);
    const aRecent = await deliver(ts, a, 2);
    unwrap(await automationsApi(ts.admin).delete(c.id));
    const bBefore = unwrap(await automationsApi(ts.admin).get(b.id)).automation;

    // Exactly 30 days after the first finished: kept. A millisecond later: gone, alone.
    ts.clock.set(t0 + SECOND + 30 * DAY);
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 0, byCount: 0 });
    ts.clock.advance(1);
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 1, byCount: 0 });
    expectError(await automationsApi(ts.admin).execution(aOld[0]!), 404, "EXECUTION_NOT_FOUND");

    // A day later every execution finished in the first seconds is past: a's, b's but its newest,
    // and c's (its automation deleted, no newest kept).
    ts.clock.set(t0 + 31 * DAY);
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 4 + 1 + 2, byCount: 0 });
    expect(await idsOf(ts, a.id)).toEqual([...aRecent, resumed, leased].sort());
    expect(await idsOf(ts, b.id)).toEqual([bOld[1]]);
    expect(await idsOf(ts, c.id)).toEqual([]);
    for (const id of [...aOld, bOld[0]!, ...cOld]) expectError(await automationsApi(ts.admin).execution(id), 404, "EXECUTION_NOT_FOUND");
    expect(unwrap(await automationsApi(ts.admin).get(b.id)).automation.lastExecutedAt).toBe(bBefore.lastExecutedAt);
    // Nothing else is due: a second sweep removes nothing.
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 0, byCount: 0 });

    // The resumed run was made at t0 + 10 s but finished 5 days later: it goes 30 days after that.
    ts.clock.set(t0 + 35 * DAY + 20 * SECOND);
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 0, byCount: 0 });
    ts.clock.advance(1);
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 1, byCount: 0 });
    expectError(await automationsApi(ts.admin).execution(resumed), 404, "EXECUTION_NOT_FOUND");

    // Past the recent ones too: a keeps its newest (lastExecutedAt reads it) and the leased run.
    ts.clock.set(t0 + 60 * DAY);
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 1, byCount: 0 });
    expect(await idsOf(ts, a.id)).toEqual([aRecent[1], leased].sort());
    const aNow = unwrap(await automationsApi(ts.admin).get(a.id)).automation;
    expect(aNow.lastExecutedAt).toBe(new Date(t0 + 10 * DAY + 2 * SECOND).toISOString());
    expect(unwrap(await automationsApi(ts.admin).execution(leased)).automationExecution.state).toBe("AUTOMATION_EXECUTION_STATE_RUNNING");
  });

  it("never removes a pending execution, however old", async () => {
    const hook = await hooked(ts);
    // Stopped: events are recorded pending, for another instance's worker.
    await ts.server.worker.stop();
    const pending = await deliver(ts, hook, 2);
    ts.clock.advance(400 * DAY);
    await ts.server.retention.sweep();
    const executions = await executionsOf(ts.admin, hook.id);
    expect(executions.map((e) => [e.id, e.state])).toEqual(pending.reverse().map((id) => [id, "AUTOMATION_EXECUTION_STATE_PENDING"]));
  });
});

describe(`by count, on ${testDialect()}: EXECUTION_RETENTION_COUNT=3`, () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ EXECUTION_RETENTION_COUNT: "3" }, undefined, { retentionPace: PACE });
  });
  afterAll(async () => ts?.stop());

  it("keeps each automation's newest 3 finished executions, in the order they are listed", async () => {
    const d = await hooked(ts);
    const e = await hooked(ts);
    const dIds = await deliver(ts, d, 7);
    const eIds = await deliver(ts, e, 2);
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 0, byCount: 4 });
    expect((await executionsOf(ts.admin, d.id)).map((x) => x.id)).toEqual(dIds.slice(4).reverse());
    expect(await idsOf(ts, e.id)).toEqual([...eIds].sort());
    for (const id of dIds.slice(0, 4)) expectError(await automationsApi(ts.admin).execution(id), 404, "EXECUTION_NOT_FOUND");

    const more = await deliver(ts, d, 2);
    expect(await ts.server.retention.sweep()).toEqual({ byAge: 0, byCount: 2 });
    expect((await executionsOf(ts.admin, d.id)).map((x) => x.id)).toEqual([...dIds.slice(6), ...more].reverse());
  });
});

describe(`two instances on one ${testDialect()} database sweeping at once`, () => {
  const key = Buffer.alloc(32, 5).toString("base64url");
  let ts: TestServer;
  let other: RunningServer;
  beforeAll(async () => {
    ts = await startTestServer({ SECRETS_KEY: key }, undefined, { retentionPace: PACE });
    const config = loadConfig({ PORT: String(await freePort()), HOST: "127.0.0.1", DATABASE_URL: ts.databaseUrl, SECRETS_KEY: key, BOOTSTRAP_CLIENT_ID: BOOTSTRAP.clientId, BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP.clientSecret, LOG_LEVEL: "silent" });
    other = await startServer({ config, clock: ts.clock, logger: createLogger("silent"), retentionPace: PACE });
  });
  afterAll(async () => {
    await other?.close();
    await ts?.stop();
  });

  it("remove each execution once between them, and neither fails", async () => {
    const hooks = [await hooked(ts), await hooked(ts)];
    for (const hook of hooks) await deliver(ts, hook, 20);
    await other.worker.idle();
    ts.clock.advance(31 * DAY);
    const [one, two] = await Promise.all([ts.server.retention.sweep(), other.retention.sweep()]);
    // Every execution but each automation's newest, in batches of 2 taken by both.
    expect(one.byAge + two.byAge).toBe(38);
    expect(one.byAge).toBeGreaterThan(0);
    expect(two.byAge).toBeGreaterThan(0);
    for (const hook of hooks) expect(await executionsOf(ts.admin, hook.id)).toHaveLength(1);
  });
});

describe(`the sweep on its timer, on ${testDialect()}: EXECUTION_RETENTION_SWEEP_SECONDS=1`, () => {
  const logs = logCapture();
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ EXECUTION_RETENTION_SWEEP_SECONDS: "1" }, logs.stream);
  });
  afterAll(async () => ts?.stop());

  it("runs by itself on every instance and logs how many it removed", async () => {
    const hook = await hooked(ts);
    const [first, second] = await deliver(ts, hook, 2);
    ts.clock.advance(31 * DAY);
    const deadline = Date.now() + 10_000;
    while ((await idsOf(ts, hook.id)).length > 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await idsOf(ts, hook.id)).toEqual([second]);
    expectError(await automationsApi(ts.admin).execution(first!), 404, "EXECUTION_NOT_FOUND");
    const lines = logs.text().trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ msg: "swept automation executions", removed: 1, byAge: 1, byCount: 0 }));
  });
});

/** Waits, 10 s at most, until the automation has `count` executions left (the sweep's first batch done). */
async function untilExecutions(ts: TestServer, automationId: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await idsOf(ts, automationId)).length > count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(await idsOf(ts, automationId)).toHaveLength(count);
}

/** What `work` answers, or "still pausing" when it has not answered within 5 s (the pause is 10 minutes). */
async function beforePauseEnds<T>(work: Promise<T>): Promise<T | "still pausing"> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([work, new Promise<"still pausing">((resolve) => (timer = setTimeout(() => resolve("still pausing"), 5_000)))]);
  clearTimeout(timer);
  return outcome;
}

describe(`a stop during a long pause, on ${testDialect()}: batches of 1, a pause of 10 minutes after each`, () => {
  const logs = logCapture();
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ EXECUTION_RETENTION_SWEEP_SECONDS: "1" }, logs.stream, { retentionPace: { batchRows: 1, pauseFactor: 0, minPauseMs: 600_000 } });
  });
  afterAll(async () => ts?.stop());

  it("ends the pause at once: the stop, and the sweep under way, finish well before the pause would have", async () => {
    const hook = await hooked(ts);
    const [, , third] = await deliver(ts, hook, 3);
    ts.clock.advance(31 * DAY);
    // The timer's sweep removes one (a full batch of 1), then pauses for 10 minutes.
    await untilExecutions(ts, hook.id, 2);

    const started = performance.now();
    const outcome = await beforePauseEnds(ts.server.retention.stop().then(() => "stopped" as const));
    expect(outcome).toBe("stopped");
    expect(performance.now() - started).toBeLessThan(5_000);
    // The sweep settled (the stop waits for it) with its one batch, and no batch came after the stop.
    const lines = logs.text().trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l.msg === "swept automation executions")).toEqual([expect.objectContaining({ removed: 1, byAge: 1, byCount: 0 })]);
    expect(await idsOf(ts, hook.id)).toHaveLength(2);
    expect(await idsOf(ts, hook.id)).toContain(third);
  });
});

describe(`a stop during a long pause of a sweep run by hand, on ${testDialect()}: batches of 1, a pause of 10 minutes after each`, () => {
  let ts: TestServer;
  beforeAll(async () => {
    // The timer's sweep is a day away: the only sweep is the test's.
    ts = await startTestServer({ EXECUTION_RETENTION_SWEEP_SECONDS: "86400" }, undefined, { retentionPace: { batchRows: 1, pauseFactor: 0, minPauseMs: 600_000 } });
  });
  afterAll(async () => ts?.stop());

  it("ends the pause at once: the sweep answers what it removed, well before the pause would have ended", async () => {
    const hook = await hooked(ts);
    await deliver(ts, hook, 3);
    ts.clock.advance(31 * DAY);
    const swept = ts.server.retention.sweep();
    await untilExecutions(ts, hook.id, 2);

    const started = performance.now();
    const outcome = await beforePauseEnds(Promise.all([ts.server.retention.stop(), swept]).then(([, result]) => result));
    expect(outcome).toEqual({ byAge: 1, byCount: 0 });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await idsOf(ts, hook.id)).toHaveLength(2);
  });
});

describe(`the count's budget, on ${testDialect()}: EXECUTION_RETENTION_COUNT=1, 3 batches a sweep`, () => {
  let ts: TestServer;
  beforeAll(async () => {
    // A batch removes all of an automation's excess (2 < 10): an automation costs a read of its cut
    // and a batch; the age pass, with nothing past the retention, a batch.
    ts = await startTestServer({ EXECUTION_RETENTION_COUNT: "1", EXECUTION_RETENTION_SWEEP_SECONDS: "86400" }, undefined, {
      retentionPace: { batchRows: 10, minPauseMs: 0, pauseFactor: 0, maxBatches: 3 },
    });
  });
  afterAll(async () => ts?.stop());

  it("a sweep reaches a few automations; the next go on after the last one reached, wrapping to the first, until every automation keeps its newest", async () => {
    const hooks: Hooked[] = [];
    for (let n = 0; n < 5; n++) hooks.push(await hooked(ts));
    // In the order the sweeps take them.
    hooks.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    const newest = new Map<string, string>();
    for (const hook of hooks) newest.set(hook.id, (await deliver(ts, hook, 3))[2]!);
    const counts = async () => Promise.all(hooks.map(async (hook) => (await idsOf(ts, hook.id)).length));

    // The first sweep reaches the first automation only (the age pass's batch, its cut, its batch):
    // the others keep all 3.
    const first = await ts.server.retention.sweep();
    expect(first).toEqual({ byAge: 0, byCount: 2 });
    expect(await counts()).toEqual([1, 3, 3, 3, 3]);

    // Each sweep goes on where the last stopped: the automations brought down are always the first
    // ones, one more every sweep or two; a sweep that went back to the first would never reach the last.
    let removed = first.byCount;
    let done = 0;
    for (let sweeps = 1; sweeps < 12 && done < hooks.length; sweeps++) {
      removed += (await ts.server.retention.sweep()).byCount;
      const now = await counts();
      const reached = now.findIndex((c) => c !== 1);
      const prefix = reached === -1 ? hooks.length : reached;
      expect(now.slice(prefix).every((c) => c === 3)).toBe(true);
      expect(prefix).toBeGreaterThanOrEqual(done);
      done = prefix;
    }
    expect(await counts()).toEqual(hooks.map(() => 1));
    expect(removed).toBe(2 * hooks.length);
    for (const hook of hooks) expect(await idsOf(ts, hook.id)).toEqual([newest.get(hook.id)]);

    // Past the last automation the count starts over from the first: its new executions go too.
    const first0 = hooks[0]!;
    const again = await deliver(ts, first0, 2);
    for (let sweeps = 0; sweeps < 12 && (await idsOf(ts, first0.id)).length > 1; sweeps++) await ts.server.retention.sweep();
    expect(await idsOf(ts, first0.id)).toEqual([again[1]]);
  });
});
