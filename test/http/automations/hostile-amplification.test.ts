// Amplification-shaped automations and payloads (issue 14, finding 1): fast-check generates steps
// that multiply a 64 KB payload (a comprehension returning a long string per item, nested
// comprehensions, strings and lists doubled, literals repeating the payload, a join with a long
// separator, a split into characters, later steps repeating earlier outputs) and payloads that
// feed them (a long string of one- to six-byte characters as JSON, a long list, many words), and
// runs them through CheckAutomationSteps and through the real intake and worker. Every answer is
// bounded: never 5xx, every value within 256 KB as JSON, every step's output within 256 KB, every
// execution's outputs within 1 MB, a report within twice that; every execution ends DONE or ERROR
// and is listed; the server keeps answering. Seeded: FC_SEED replays a run, FC_RUNS sets the number
// of cases per property.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { reliabilitySuite } from "../../support/reliability.js";
import type { TestServer } from "../../support/server.js";
import { createHooked, expectAccepted, sendHmac, settled, startAutomationsServer, type AutomationsApi, type Step } from "../webhooks/helpers.js";

const SEED = Number(process.env.FC_SEED ?? 20_261_120);
const RUNS = Number(process.env.FC_RUNS ?? 25);

const VALUE_BOUND = 262_144;
const STEP_BOUND = 262_144;
const EXECUTION_BOUND = 1_048_576;
const PAYLOAD_BYTES = 65_536;

const counts = reliabilitySuite("hostile-amplification", testDialect());
let ts: TestServer;
let api: AutomationsApi;

beforeAll(async () => void ({ ts, api } = await startAutomationsServer()));
afterAll(async () => ts?.stop());

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");

// ---- payloads ---------------------------------------------------------------------------------

/**
 * Characters of 1 to 6 bytes as JSON: the same length in memory can weigh six times more stored.
 * The API refuses NUL in request bodies (the storable-text rule); a webhook body may carry it.
 */
const UNITS = ["x", "é", "€", "😀", '"', "\\", "\n", "\u0001", "\u2028"];

/** `{ s, list, words }` of 1 to 60 KB in a generated proportion, never more than 64 KB as JSON. */
const payload = (units: string[]) =>
  fc
    .record({
      unit: fc.constantFrom(...units),
      fill: fc.integer({ min: 1_000, max: 60_000 }),
      share: fc.double({ min: 0.05, max: 0.95, noNaN: true }),
      words: fc.integer({ min: 0, max: 400 }),
    })
    .map(({ unit, fill, share, words }) => {
      const wordList = Array.from({ length: words }, (_, i) => `w${i}`.padEnd(12, "w"));
      const room = Math.max(0, fill - bytes(wordList));
      const s = unit.repeat(Math.max(1, Math.floor((room * share) / (bytes(unit) - 2))));
      const list = Array.from({ length: Math.max(1, Math.floor((room * (1 - share)) / 2)) }, (_, i) => i % 10);
      return { s, list, words: wordList };
    });

// ---- expressions ------------------------------------------------------------------------------

/** What a comprehension makes per item (`x` is the item). */
const body = fc.constantFrom("ctx.trigger.s", "ctx.trigger.s + string(x)", "[ctx.trigger.s, x]", "{'k': ctx.trigger.s, 'x': x}", "ctx.trigger", "ctx.trigger.list");

const doubling = fc.tuple(fc.constantFrom("ctx.trigger.s", "ctx.trigger.list", "[ctx.trigger.s]", "ctx.trigger.words"), fc.integer({ min: 1, max: 9 })).map(([base, times]) => {
  let expression = `a${times}`;
  for (let i = times; i >= 1; i--) expression = `cel.bind(a${i}, a${i - 1} + a${i - 1}, ${expression})`;
  return `cel.bind(a0, ${base}, ${expression})`;
});

const repeated = fc.tuple(fc.integer({ min: 1, max: 16 }), fc.boolean(), fc.constantFrom("ctx.trigger", "ctx.trigger.s", "ctx.trigger.list")).map(([copies, asMap, what]) =>
  asMap ? `{${Array.from({ length: copies }, (_, i) => `'k${i}': ${what}`).join(", ")}}` : `[${Array.from({ length: copies }, () => what).join(", ")}]`,
);

/** Expressions that build something large from the payload (and, after the first step, from earlier outputs). */
const amplifying = (earlier: string[]) =>
  fc.oneof(
    body.map((b) => `ctx.trigger.list.map(x, ${b})`),
    body.map((b) => `ctx.trigger.words.map(x, ${b})`),
    body.map((b) => `ctx.trigger.words.map(w, ctx.trigger.words.map(x, ${b}))`),
    body.map((b) => `ctx.trigger.list.filter(x, true).map(x, ${b})`),
    body.map((b) => `ctx.trigger.list.map(x, ${b}).filter(y, true)`),
    doubling,
    repeated,
    fc.constantFrom(
      "ctx.trigger.list.map(x, ctx.trigger.s).join(',')",
      "ctx.trigger.words.join(ctx.trigger.s)",
      "(ctx.trigger.s + ctx.trigger.s).split('')",
      "ctx.trigger.s.split('').map(c, ctx.trigger.s)",
    ),
    ...(earlier.length > 0
      ? [fc.constantFrom(...earlier).chain((name) => fc.constantFrom(`[ctx.steps.${name}, ctx.steps.${name}]`, "ctx.steps", `ctx.trigger.list.map(x, ctx.steps.${name})`))]
      : []),
  );

/** Used whole, or only through its size (then only what is built on the way is large), or as a condition. */
const wrapped = (earlier: string[]) =>
  fc.tuple(amplifying(earlier), fc.constantFrom("%", "size(%)", "size(%) > 0 || true")).map(([expression, wrapper]) => wrapper.replace("%", expression));

/** One to three steps of one to three expressions each; a step may read the earlier ones. */
const steps: fc.Arbitrary<Step[]> = fc.integer({ min: 1, max: 3 }).chain((count) =>
  fc.tuple(
    ...Array.from({ length: count }, (_, i) => {
      const earlier = Array.from({ length: i }, (__, j) => `s${j}`);
      return fc.array(wrapped(earlier), { minLength: 1, maxLength: 3 }).map(
        (expressions): Step => ({ stepName: `s${i}`, evaluateExpressions: { expressions: expressions.map((expression, j) => ({ name: `e${j}`, expression })) } }),
      );
    }),
  ),
);

// ---- properties -------------------------------------------------------------------------------

const options = (runs: number) => ({ seed: SEED, numRuns: runs, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: false });

async function expectStillUp(): Promise<void> {
  const started = Date.now();
  expect((await fetch(`${ts.url}/healthz`)).status).toBe(200);
  expect(Date.now() - started).toBeLessThan(2_000);
}

describe("amplification-shaped steps and payloads", () => {
  it("generates payloads within the intake's 64 KB", () => {
    fc.assert(fc.property(payload([...UNITS, "\u0000"]), (p) => bytes(p) <= PAYLOAD_BYTES), { seed: SEED, numRuns: 200 });
  });

  it("CheckAutomationSteps answers 200 with every value within its bound, and a bounded report", async () => {
    await fc.assert(
      fc.asyncProperty(steps, payload(UNITS), (automationSteps, samplePayload) =>
        counts.check(async () => {
          const answer = await api.check({ automationSteps, samplePayload });
          expect(answer.response.status, JSON.stringify(automationSteps)).toBe(200);
          const text = JSON.stringify(answer.data);
          expect(Buffer.byteLength(text)).toBeLessThanOrEqual(2 * EXECUTION_BOUND + 64 * 1024);
          const report = unwrap(answer);
          expect(report.problems, JSON.stringify(automationSteps)).toEqual([]);
          expect(report.evaluations).toHaveLength(automationSteps.reduce((n, s) => n + (s.evaluateExpressions?.expressions.length ?? 0), 0));
          for (const e of report.evaluations) {
            expect(bytes(e.value)).toBeLessThanOrEqual(VALUE_BOUND);
            if (e.error !== null) expect([...e.error].length).toBeLessThanOrEqual(301);
          }
        }),
      ),
      options(RUNS * 2),
    );
    await expectStillUp();
  }, 300_000);

  it("through the intake: accepted, every execution ends DONE or ERROR within the bounds, and is listed", async () => {
    await fc.assert(
      fc.asyncProperty(steps, payload([...UNITS, "\u0000"]), (automationSteps, body) =>
        counts.check(async () => {
          const hook = await createHooked(ts, { steps: automationSteps });
          const started = Date.now();
          const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, JSON.stringify(body)));
          const execution = await settled(ts, event.automationExecutionId!);
          expect(Date.now() - started).toBeLessThan(10_000);
          expect(["AUTOMATION_EXECUTION_STATE_DONE", "AUTOMATION_EXECUTION_STATE_ERROR"]).toContain(execution.state);
          let total = 0;
          for (const result of execution.stepResults) {
            const size = result.output === null ? 0 : bytes(result.output);
            expect(size, result.stepName).toBeLessThanOrEqual(STEP_BOUND);
            total += size;
            if (result.error !== null) expect([...result.error].length).toBeLessThanOrEqual(301);
          }
          expect(total).toBeLessThanOrEqual(EXECUTION_BOUND);
          const listed = await api.executions({ automation_id: hook.id });
          expect(listed.response.status).toBe(200);
          expect(unwrap(listed).list.map((i) => i.automationExecution)).toEqual([execution]);
        }),
      ),
      options(RUNS),
    );
    await expectStillUp();
    // Every execution of the run, at once: the list answers.
    expect((await api.executions({ page_size: 100 })).response.status).toBe(200);
  }, 300_000);
});
