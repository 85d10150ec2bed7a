// Generated JSON payloads whose keys are names of JavaScript's object machinery (`constructor`,
// `__proto__`, `toString`, `hasOwnProperty`...) at random depths, in objects and in lists. CEL reads
// them exactly as the JSON says: every value at every path (by selection and by index), `has()`,
// `in`, `size()`, the keys and values through comprehensions, and a step's output read back by a
// later step, in steps named `__proto__` and `constructor`. Through CheckAutomationSteps with the
// payload as sample, and through real signed webhook deliveries (fewer). Seeded: FC_SEED replays a
// run, FC_RUNS sets the number of payloads.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { reliabilitySuite } from "../../support/reliability.js";
import type { TestServer } from "../../support/server.js";
import { prototypeNames } from "../../support/prototypes.js";
import { createHooked, expectAccepted, sendHmac, settled, startAutomationsServer, type AutomationsApi, type Step } from "../webhooks/helpers.js";

const SEED = Number(process.env.FC_SEED ?? 20_261_123);
const RUNS = Number(process.env.FC_RUNS ?? 40);
const DELIVERIES = Math.max(1, Math.ceil(RUNS / 4));

/** Own names of Object.prototype and the names the library or a Map could trip on. */
const RESERVED = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "toLocaleString",
  "prototype",
  "then",
  "size",
  "get",
  "has",
] as const;

const counts = reliabilitySuite("hostile-reserved-keys", testDialect());
let ts: TestServer;
let api: AutomationsApi;
/** The prototypes before any request. */
const before = prototypeNames();

beforeAll(async () => void ({ ts, api } = await startAutomationsServer()));
afterAll(async () => ts?.stop());

// ---- payloads ---------------------------------------------------------------------------------

const key = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...RESERVED) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) });
const scalar = fc.oneof(
  fc.constant("null"),
  fc.boolean().map(String),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.string({ maxLength: 12 }).map((s) => JSON.stringify(s)),
);
/** An object's JSON text from `entries` of a key and a value's text. */
const objectOf = (entries: [string, string][]) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`;
/** JSON texts (generated as text: an object literal of the test could not hold a `__proto__` key); payloads are non-empty objects. */
const { payload: payloadText } = fc.letrec<{ json: string; list: string; object: string; payload: string }>((tie) => ({
  json: fc.oneof({ maxDepth: 4, depthIdentifier: "json" }, scalar, tie("list"), tie("object")),
  list: fc.array(tie("json"), { maxLength: 3, depthIdentifier: "json" }).map((items) => `[${items.join(",")}]`),
  object: fc.uniqueArray(fc.tuple(key, tie("json")), { selector: ([k]) => k, maxLength: 5, depthIdentifier: "json" }).map(objectOf),
  payload: fc.uniqueArray(fc.tuple(key, tie("json")), { selector: ([k]) => k, minLength: 1, maxLength: 6, depthIdentifier: "json" }).map(objectOf),
}));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Segment = string | number;

/** The value at `path` (own properties only, so a `__proto__` key is its value). */
function at(value: Json, path: readonly Segment[]): Json {
  let v: Json = value;
  for (const s of path) v = Object.getOwnPropertyDescriptor(v as object, s)!.value as Json;
  return v;
}

/** Every path of `value`, the root first, parents before children. */
function pathsOf(value: Json): Segment[][] {
  const out: Segment[][] = [];
  const walk = (v: Json, path: Segment[]) => {
    out.push(path);
    if (Array.isArray(v)) v.forEach((item, i) => walk(item, [...path, i]));
    else if (v !== null && typeof v === "object") for (const k of Object.keys(v)) walk(at(v, [k]), [...path, k]);
  };
  walk(value, []);
  return out;
}

const isObject = (v: Json): v is { [key: string]: Json } => v !== null && typeof v === "object" && !Array.isArray(v);
const isReserved = (s: Segment): s is (typeof RESERVED)[number] => (RESERVED as readonly Segment[]).includes(s);

/** CEL reading `path` of ctx.trigger; reserved keys alternately by selection and by index. */
function accessor(path: readonly Segment[]): string {
  return path.reduce<string>((acc, s, i) => (typeof s === "number" ? `${acc}[${s}]` : isReserved(s) && i % 2 === 0 ? `${acc}.${s}` : `${acc}[${JSON.stringify(s)}]`), "ctx.trigger");
}

interface Probe {
  expression: string;
  expected: Json;
}

/** What to ask of one payload: each path read, and for objects their keys, values, size and has()/in. */
function probesOf(payload: Json, limit: number): Probe[] {
  const probes: Probe[] = [];
  // Paths through a reserved key first: they are the point.
  const paths = pathsOf(payload).sort((a, b) => Number(b.some(isReserved)) - Number(a.some(isReserved)));
  for (const path of paths) {
    const value = at(payload, path);
    const acc = accessor(path);
    probes.push({ expression: acc, expected: value });
    const last = path[path.length - 1];
    // has() takes a selection chain only (this library's rule): the parent is bound to a name.
    if (typeof last === "string" && isReserved(last)) probes.push({ expression: `cel.bind(p, ${accessor(path.slice(0, -1))}, has(p.${last}))`, expected: true });
    if (isObject(value)) {
      const keys = Object.keys(value);
      probes.push({ expression: `[size(${acc}), ${acc}.map(k, k), ${acc}.map(k, ${acc}[k])]`, expected: [keys.length, keys, keys.map((k) => at(value, [k]))] });
      probes.push({ expression: `[${RESERVED.map((r) => `${JSON.stringify(r)} in ${acc}`).join(", ")}]`, expected: RESERVED.map((r) => keys.includes(r)) });
      probes.push({ expression: `${acc}.all(k, k in ${acc}) && ${acc}.filter(k, !(k in ${acc})) == []`, expected: true });
    }
  }
  return probes.slice(0, limit);
}

const namedStep = (stepName: string, pairs: [string, string][]): Step => ({
  stepName,
  evaluateExpressions: { expressions: pairs.map(([name, expression]) => ({ name, expression })) },
});

/** A later step, named `constructor`, reads the whole output of the step named `__proto__`. */
const READ_BACK = namedStep("constructor", [
  ["same", 'ctx.steps["__proto__"]["__proto__"] == ctx.trigger'],
  ["copy", "ctx.steps.__proto__.__proto__"],
]);

const text = (v: unknown) => JSON.stringify(v);

// ---- properties -------------------------------------------------------------------------------

const options = (runs: number): fc.Parameters<[string]> => ({ seed: SEED, numRuns: runs, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: false });

describe("reserved JSON keys read as data", () => {
  it("through CheckAutomationSteps: every path, has(), in, size() and comprehensions give the payload's values", { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(payloadText, (body) =>
        counts.check(async () => {
          const payload = JSON.parse(body) as Json;
          const probes = probesOf(payload, 49);
          const steps = [namedStep("__proto__", [["__proto__", "ctx.trigger"], ...probes.map((p, i): [string, string] => [`e${i}`, p.expression])]), READ_BACK];
          const report = unwrap(await api.check({ automationSteps: steps, samplePayload: payload }));
          expect(report.problems, body).toEqual([]);
          const expected = [payload, ...probes.map((p) => p.expected), true, payload];
          expect(report.evaluations.map((e) => [e.error, text(e.value)]), body).toEqual(expected.map((v) => [null, text(v)]));
        }),
      ),
      options(RUNS),
    );
  });

  it("through signed webhook deliveries: the run's outputs hold the payload's values", { timeout: 300_000 }, async () => {
    const reads: [string, string][] = [
      ["__proto__", "ctx.trigger"],
      ["keys", "ctx.trigger.map(k, k)"],
      ["values", "ctx.trigger.map(k, ctx.trigger[k])"],
      ["size", "size(ctx.trigger)"],
      ["reserved", `[${RESERVED.map((r) => `ctx.trigger[?${JSON.stringify(r)}].orValue("absent")`).join(", ")}]`],
    ];
    const hook = await createHooked(ts, { steps: [namedStep("__proto__", reads), READ_BACK] });
    await fc.assert(
      fc.asyncProperty(payloadText, (body) =>
        counts.check(async () => {
          const payload = JSON.parse(body) as { [key: string]: Json };
          const keys = Object.keys(payload);
          const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret, body));
          const execution = await settled(ts, event.automationExecutionId!);
          expect(execution.stepResults!.map((r) => [r.state, r.error]), body).toEqual([
            ["STEP_STATE_DONE", null],
            ["STEP_STATE_DONE", null],
          ]);
          const values = [payload, keys, keys.map((k) => at(payload, [k])), keys.length, RESERVED.map((r) => (keys.includes(r) ? at(payload, [r]) : "absent"))];
          expect(text(execution.stepResults![0]!.output), body).toBe(`{${reads.map(([name], i) => `${text(name)}:${text(values[i])}`).join(",")}}`);
          expect(text(execution.stepResults![1]!.output), body).toBe(`{"same":true,"copy":${text(payload)}}`);
        }),
      ),
      options(DELIVERIES),
    );
  });

  it("leave every prototype of the server's process as it was (the server runs in this process)", () => {
    expect(prototypeNames()).toEqual(before);
    expect(({} as Record<string, unknown>)["constructor"]).toBe(Object);
  });
});
