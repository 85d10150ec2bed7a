// Fund events across three server processes on one database: a usage threshold crossed by many
// decisions at once on every instance fires once; decisions that lost their Idempotency-Key rolled
// back with their events; and an event whose change committed runs even when the instance that
// made it is killed (SIGKILL) right after answering.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { eventOf, fundAutomation, settledExecutions, stillExecutions } from "./fund-events-helpers.js";
import { amount, funds, money, newAppId } from "../limits/helpers.js";
import { spends } from "../spends/helpers.js";

const ADMIN = { clientId: "fund-events-admin", clientSecret: "fund-events-admin-secret-0123456789" };

let cluster: Instances | undefined;
let clients: ApiClient[] = [];
let userId: string;

beforeAll(async () => {
  // Rate limits off: 50 requests at once from one address is the point. A short lease: the killed
  // instance's claims lapse within the test.
  cluster = await startInstances(3, ADMIN, "http://tenant.example.test", { RATE_LIMIT: "off", EXECUTION_LEASE_SECONDS: "10" });
  clients = cluster.clients;
  userId = unwrap(await clients[0]!.POST("/api/v1/users", { body: { displayName: "Spender", email: `fund-events-${Date.now()}@example.com`, roles: ["ROLE_USER"] } })).user.id!;
}, 120_000);
afterAll(async () => cluster?.stop(), 120_000);

async function limitedApp(units: string): Promise<string> {
  const appId = newAppId("fund");
  unwrap(await funds(clients[1]!).setLimit(userId, appId, { limit: amount(units), period: "PERIOD_KIND_MONTHLY" }));
  return appId;
}

/** Every instance sees a trigger saved on another within 1 s (the change watch's bound). */
const triggersSeen = () => new Promise((r) => setTimeout(r, 1_200));

describe(`fund events on three instances on one ${testDialect()} database`, () => {
  it("50 concurrent decisions over the three instances cross two thresholds: one execution per threshold", async () => {
    const appId = await limitedApp("100");
    const id = await fundAutomation(clients[0]!, { eventTypes: ["FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"], usageThresholdPercents: [50, 80], conditionCel: `ctx.trigger.appId == "${appId}"` });
    await triggersSeen();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => spends(clients[i % 3]!).authorize({ userId, appId, amount: money("2") }).then(unwrap)));
    expect(answers.every((a) => a.authorization.decision.approved)).toBe(true);
    const runs = await settledExecutions(clients, id, 2);
    expect(runs.map((e) => eventOf(e).usageThreshold!.percent).sort()).toEqual([50, 80]);
    for (const run of runs) {
      const { usage, percent } = eventOf(run).usageThreshold!;
      // The decision that fired it is the first to leave the window at or above the threshold.
      const used = Number(usage.spent.units) + Number(usage.held.units);
      expect(used).toBeGreaterThanOrEqual(percent);
      expect(used - 2).toBeLessThan(percent);
    }
    await stillExecutions(clients[2]!, id, 2, 1_000);
  }, 120_000);

  it("one Idempotency-Key sent 30 times at once over the instances: one authorization, one event (the others rolled back)", async () => {
    const appId = await limitedApp("100");
    const id = await fundAutomation(clients[0]!, { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED"], conditionCel: `ctx.trigger.appId == "${appId}"` });
    await triggersSeen();
    const key = `race-${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => spends(clients[i % 3]!).authorize({ userId, appId, amount: money("1") }, key).then(unwrap)));
    const ids = new Set(answers.map((a) => a.authorization.id));
    expect(ids.size).toBe(1);
    const [run] = await settledExecutions(clients, id, 1);
    expect(eventOf(run!).authorization!.id).toBe([...ids][0]);
    await stillExecutions(clients[1]!, id, 1, 1_000);
  }, 120_000);

  it("an instance killed (SIGKILL) right after its decision committed: its event's execution runs on another", async () => {
    const appId = await limitedApp("100");
    const id = await fundAutomation(clients[0]!, { eventTypes: ["FUND_EVENT_TYPE_SPEND_AUTHORIZED"], conditionCel: `ctx.trigger.appId == "${appId}"` });
    await triggersSeen();
    const victim = cluster!.instances[2]!;
    const decided = unwrap(await spends(clients[2]!).authorize({ userId, appId, amount: money("3") })).authorization;
    victim.child.kill("SIGKILL");
    const [run] = await settledExecutions(clients.slice(0, 2), id, 1, 40_000);
    expect(run!.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    expect(eventOf(run!).authorization).toEqual(decided);
  }, 120_000);
});
