// JSON keys that are names of JavaScript's object machinery (`constructor`, `__proto__`, `toString`,
// `hasOwnProperty`, `valueOf`, `__defineGetter__`, `prototype`) are plain data in CEL: a webhook body
// or a sample payload with them reads, tests with has(), counts and iterates exactly as any other
// key, map literals keep them, and steps and expressions may be named so. Nothing of it reaches a
// prototype of the server's process (the test server runs in this process: its prototypes are
// these).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { prototypeNames } from "../../support/prototypes.js";
import { createHooked, expectAccepted, sendHmac, settled, startAutomationsServer, type AutomationsApi, type Execution, type Hooked, type Step } from "../webhooks/helpers.js";

let ts: TestServer;
let api: AutomationsApi;

/** The prototypes before any request. */
const before = prototypeNames();

beforeAll(async () => void ({ ts, api } = await startAutomationsServer()));
afterAll(async () => ts?.stop());

/** Every reserved name at the top, and again in a nested object and in an object inside a list. */
const BODY =
  '{"constructor":1,"a":1,"__proto__":{"constructor":null,"toString":"x","polluted":true},"toString":2,' +
  '"hasOwnProperty":3,"valueOf":4,"__defineGetter__":5,"prototype":6,"list":[{"__proto__":{"valueOf":[]}}]}';
const PAYLOAD = JSON.parse(BODY) as Record<string, unknown>;

/** A step of named expressions; names and expressions as pairs, since an object literal cannot hold a `__proto__` key. */
const namedStep = (stepName: string, pairs: [string, string][]): Step => ({
  stepName,
  evaluateExpressions: { expressions: pairs.map(([name, expression]) => ({ name, expression })) },
});

/** Reads of ctx.trigger, each with its expected JSON text. */
const READS: [string, string, string][] = [
  ["whole", "ctx.trigger", BODY],
  ["a", "ctx.trigger.a", "1"],
  ["ctor", "ctx.trigger.constructor", "1"],
  ["proto", 'ctx.trigger["__proto__"]', '{"constructor":null,"toString":"x","polluted":true}'],
  ["protoCtor", "ctx.trigger.__proto__.constructor", "null"],
  ["toString", "ctx.trigger.toString + ctx.trigger.hasOwnProperty + ctx.trigger.valueOf", "9"],
  ["nested", 'ctx.trigger.list[0]["__proto__"].valueOf', "[]"],
  ["has", "[has(ctx.trigger.constructor), has(ctx.trigger.__proto__), has(ctx.trigger.__proto__.constructor), has(ctx.trigger.isPrototypeOf)]", "[true,true,true,false]"],
  ["in", '["__defineGetter__" in ctx.trigger, "prototype" in ctx.trigger, "propertyIsEnumerable" in ctx.trigger]', "[true,true,false]"],
  ["size", "[size(ctx.trigger), size(ctx.trigger.__proto__)]", "[9,3]"],
  ["keys", "ctx.trigger.map(k, k)", JSON.stringify(Object.keys(PAYLOAD))],
  ["filter", 'ctx.trigger.filter(k, k.startsWith("_"))', '["__proto__","__defineGetter__"]'],
  ["all", "ctx.trigger.all(k, k in ctx.trigger) && ctx.trigger.exists(k, k == \"constructor\") && ctx.trigger.exists_one(k, k == \"__proto__\")", "true"],
  ["values", 'ctx.trigger.__proto__.map(k, ctx.trigger.__proto__[k])', '[null,"x",true]'],
  ["optional", "ctx.trigger.?constructor.orValue(0) + ctx.trigger.?isPrototypeOf.orValue(10.0)", "11"],
  ["literal", '{"constructor": 1, "__proto__": {"toString": 2}, "prototype": 3}', '{"constructor":1,"__proto__":{"toString":2},"prototype":3}'],
  ["equal", '{"constructor": 1, "__proto__": 2} == {"__proto__": 2, "constructor": 1} && ctx.trigger.__proto__ == {"toString": "x", "polluted": true, "constructor": null}', "true"],
];

/** The automation under test: a step named `__proto__` reads the body, a step named `constructor` reads its output. */
const STEPS: Step[] = [
  namedStep("__proto__", [...READS.map(([name, expression]): [string, string] => [name, expression]), ["__proto__", "ctx.trigger.constructor"], ["constructor", '{"__proto__": ctx.trigger.toString}']]),
  namedStep("constructor", [
    ["fromProto", 'ctx.steps["__proto__"]["__proto__"] + ctx.steps.__proto__.constructor.__proto__'],
    ["stepKeys", "ctx.steps.map(s, s)"],
    ["hasStep", 'has(ctx.steps.__proto__) && !("toString" in ctx.steps)'],
  ]),
  namedStep("toString", [["fromConstructor", "ctx.steps.constructor.fromProto"]]),
];

const EXPECTED_OUTPUTS = [
  `{${READS.map(([name, , json]) => `"${name}":${json}`).join(",")},"__proto__":1,"constructor":{"__proto__":2}}`,
  '{"fromProto":3,"stepKeys":["__proto__"],"hasStep":true}',
  '{"fromConstructor":3}',
];

/** Delivers `body` (JSON text, sent as is) and answers the settled execution. */
async function deliver(hook: Hooked, body: string): Promise<Execution> {
  const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, body));
  return settled(ts, event.automationExecutionId!);
}

describe("JSON keys named as JavaScript's object machinery", () => {
  it("read as data in a webhook's run: reads, has(), size(), comprehensions, literals, steps and expressions so named", async () => {
    const hook = await createHooked(ts, { steps: STEPS });
    // The names were saved and are shown as given.
    expect(unwrap(await api.get(hook.id)).automation.automationSteps!.map((s) => s.stepName)).toEqual(["__proto__", "constructor", "toString"]);
    const execution = await deliver(hook, BODY);
    expect(execution.stepResults!.map((r) => [r.stepName, r.state, r.error])).toEqual([
      ["__proto__", "STEP_STATE_DONE", null],
      ["constructor", "STEP_STATE_DONE", null],
      ["toString", "STEP_STATE_DONE", null],
    ]);
    // Compared as JSON text: a `__proto__` key lost on either side cannot go unseen.
    expect(execution.stepResults!.map((r) => JSON.stringify(r.output))).toEqual(EXPECTED_OUTPUTS);
    expect(JSON.stringify(execution.context!.trigger)).toBe(BODY);
    expect(execution.state).toBe("AUTOMATION_EXECUTION_STATE_DONE");
  });

  it("a null `constructor` does not break reading the other keys", async () => {
    const hook = await createHooked(ts, { steps: [namedStep("read", [["a", "ctx.trigger.a"], ["n", "ctx.trigger.constructor"], ["sum", "int(ctx.trigger.a) + size(ctx.trigger)"]])] });
    const execution = await deliver(hook, '{"constructor":null,"a":1}');
    expect(execution.stepResults![0]).toMatchObject({ state: "STEP_STATE_DONE", error: null, output: { a: 1, n: null, sum: 3 } });
  });

  it("read as data in CheckAutomationSteps with a sample payload, as in a run", async () => {
    const report = unwrap(await api.check({ automationSteps: STEPS, samplePayload: JSON.parse(BODY) }));
    expect(report.problems).toEqual([]);
    expect(report.evaluations.filter((e) => e.error !== null)).toEqual([]);
    const values = (step: number) => report.evaluations.filter((e) => e.path.startsWith(`automationSteps[${step}].`)).map((e) => JSON.stringify(e.value));
    const names = (step: number) => (STEPS[step] as Extract<Step, { evaluateExpressions: unknown }>).evaluateExpressions!.expressions.map((e) => e.name);
    const expected = EXPECTED_OUTPUTS.map((text) => JSON.parse(text) as Record<string, unknown>);
    for (const step of [0, 1, 2]) {
      const own = expected[step]!;
      expect(values(step)).toEqual(names(step).map((name) => JSON.stringify(Object.getOwnPropertyDescriptor(own, name)?.value)));
    }
  });

  it("leave no trace (runs last): no prototype gained or lost a property, and a plain body reads only its own keys", async () => {
    expect(prototypeNames()).toEqual(before);
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
    const hook = await createHooked(ts, { steps: [namedStep("read", [["keys", "ctx.trigger.map(k, k)"], ["polluted", "has(ctx.trigger.polluted)"], ["literal", '{"a": 1}.map(k, k)']])] });
    const execution = await deliver(hook, '{"b":2}');
    expect(execution.stepResults![0]).toMatchObject({ state: "STEP_STATE_DONE", output: { keys: ["b"], polluted: false, literal: ["a"] } });
  });
});
