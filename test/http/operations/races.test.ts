// Races: many requests at once on one event id and on one limit row. Whatever the interleaving,
// the outcome must be one a serial order could give: one 200 per event id and one execution, and
// a row whose every control is whole, whose last writer's answer is the final state, and from
// which no concurrent change was lost.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { reliabilitySuite } from "../../support/reliability.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { amount, DAY, funds, newAppId, type Funds, type Schemas } from "../limits/helpers.js";
import { createHooked, evaluateStep, eventsOf, executionsOf, newEventId, sendHmac } from "../webhooks/helpers.js";

const N = 50;
const counts = reliabilitySuite("races", testDialect());
let ts: TestServer;
let admin: Funds;
let userId: string;

beforeAll(async () => {
  ts = await startTestServer();
  admin = funds(ts.admin);
  userId = (await ts.userClient(["ROLE_USER"])).userId;
});
afterAll(async () => ts?.stop());

describe(`${N} concurrent deliveries of one event id`, () => {
  it("are answered one 200 and 49 409, and run the automation once", () =>
    counts.check(async () => {
      const hook = await createHooked(ts, { steps: [evaluateStep("double", { n: "ctx.trigger.n * 2.0" })] });
      const eventId = newEventId();
      const answers = await Promise.all(Array.from({ length: N }, () => sendHmac(ts, hook.url, hook.secret, '{"n":21}', { eventId })));
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(N - 1);
      await ts.server.worker.idle();
      const executions = await executionsOf(ts.admin, hook.id);
      expect(executions.map((e) => [e.eventId, e.state])).toEqual([[eventId, "AUTOMATION_EXECUTION_STATE_DONE"]]);
      expect((await eventsOf(ts.admin, hook.id)).map((e) => e.eventId)).toEqual([eventId]);
    }));
});

type Controls = Schemas["SpendControls"];
type Op = { kind: "limit" | "suspend" | "unsuspend" | "extension"; i: number };

const PERIODS = ["PERIOD_KIND_DAILY", "PERIOD_KIND_WEEKLY", "PERIOD_KIND_MONTHLY"] as const;
// Each request writes values found in no other request, so a control in an answer names its writer.
const limitOf = (i: number) => ({ limit: amount(String(1000 + i)), period: PERIODS[i % PERIODS.length] });
const extensionOf = (i: number) => ({ limit: amount(String(5000 + i)), expiresAt: new Date(ts.clock.now() + DAY + i * 1000).toISOString(), reason: `ext-${i}` });
const suspensionReason = (i: number) => `suspend-${i}`;

async function apply(appId: string, op: Op): Promise<Controls | null> {
  switch (op.kind) {
    case "limit":
      return unwrap(await admin.setLimit(userId, appId, limitOf(op.i))).limit.controls;
    case "suspend":
      return unwrap(await admin.suspend(userId, appId, { reason: suspensionReason(op.i) })).limit!.controls;
    case "unsuspend": {
      // Before any write created the row, there is nothing to unsuspend: 404, a valid outcome.
      const answer = await admin.unsuspend(userId, appId);
      if (answer.response.status === 404) return null;
      return unwrap(answer).limit?.controls ?? null;
    }
    case "extension":
      return unwrap(await admin.setExtension(userId, appId, extensionOf(op.i))).limit.controls;
  }
}

/** Every control present is exactly what one request wrote (no half-applied write), and `op`'s own effect shows. */
function expectWhole(controls: Controls | null, ops: readonly Op[], own?: Op): void {
  const of = (kind: Op["kind"]) => ops.filter((o) => o.kind === kind).map((o) => o.i);
  // A period without its limit would be a half-applied SetLimit; a row with no limit answers PERIOD_KIND_UNSPECIFIED.
  if (controls?.limit || (controls?.period && controls.period !== "PERIOD_KIND_UNSPECIFIED")) {
    expect(of("limit").map((i) => ({ limit: limitOf(i).limit, period: limitOf(i).period }))).toContainEqual({ limit: controls.limit, period: controls.period });
  }
  if (controls?.extension) expect(of("extension").map(extensionOf)).toContainEqual(controls.extension);
  if (controls?.suspension) expect(of("suspend").map(suspensionReason)).toContain(controls.suspension.reason);
  if (!own) return;
  if (own.kind === "limit") expect(controls?.limit).toEqual(limitOf(own.i).limit);
  if (own.kind === "extension") expect(controls?.extension).toEqual(extensionOf(own.i));
  if (own.kind === "suspend") expect(controls?.suspension?.reason).toBe(suspensionReason(own.i));
  if (own.kind === "unsuspend") expect(controls?.suspension ?? null).toBeNull();
}

/** Runs `ops` at once on one row, then checks every answer and the row left. */
async function race(appId: string, ops: Op[], history: Op[]): Promise<Controls | null> {
  const answers = await Promise.all(ops.map((op) => apply(appId, op)));
  const all = [...history, ...ops];
  answers.forEach((controls, k) => expectWhole(controls, all, ops[k]));
  const live = unwrap(await admin.search({ userIds: [userId], appIds: [appId], pageSize: 100 })).list;
  expect(live.length, "one live row").toBeLessThanOrEqual(1);
  const final = live[0]?.limit.controls ?? null;
  expectWhole(final, all);
  // In a serial order the last request's answer is the row as it is left.
  expect(answers).toContainEqual(final);
  return final;
}

describe(`${N} concurrent SetLimit, Suspend, Unsuspend and SetExtension on one row`, () => {
  it("on a new row, SetLimit, Suspend and SetExtension at once leave all three controls, each whole", () =>
    counts.check(async () => {
      const appId = newAppId("race");
      const kinds = ["limit", "suspend", "extension"] as const;
      const final = await race(appId, Array.from({ length: N }, (_, i) => ({ kind: kinds[i % 3]!, i })), []);
      expect(final?.limit, "no SetLimit lost").toBeTruthy();
      expect(final?.extension, "no SetExtension lost").toBeTruthy();
      expect(final?.suspension, "no Suspend lost").toBeTruthy();
    }));

  it("with Unsuspend in the mix, the row keeps its limit and extension and its suspension is the last writer's", () =>
    counts.check(async () => {
      const appId = newAppId("race");
      const setup: Op[] = [
        { kind: "limit", i: 900 },
        { kind: "extension", i: 900 },
      ];
      for (const op of setup) await apply(appId, op);
      const kinds = ["limit", "suspend", "unsuspend", "extension"] as const;
      const ops = Array.from({ length: N }, (_, i) => ({ kind: kinds[i % 4]!, i }));
      const final = await race(appId, ops, setup);
      expect(final?.limit, "the limit is never lost").toBeTruthy();
      expect(final?.extension, "the extension is never lost").toBeTruthy();
    }));

  it("repeated rounds on one row never leave two live rows or a half-applied control", async () => {
    const appId = newAppId("race");
    const kinds = ["limit", "suspend", "unsuspend", "extension"] as const;
    const history: Op[] = [];
    for (let round = 0; round < 4; round++) {
      const ops = Array.from({ length: N }, (_, i) => ({ kind: kinds[(i + round) % 4]!, i: round * N + i }));
      await counts.check(() => race(appId, ops, history));
      history.push(...ops);
    }
  });
});
