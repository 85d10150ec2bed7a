import { describe, expect, it } from "vitest";
import {
  CelEvaluationError,
  checkExpression,
  evaluate,
  evaluateBoolean,
  evaluateJson,
  evaluateString,
  evaluateTimestamp,
  toJsonValue,
  type CelContext,
  type CelEvaluationErrorCode,
  type EvaluationLimits,
  type ExpectedResult,
} from "../../src/automations/cel.js";
import { activeBudget } from "../../src/automations/cel-budget.js";
import { mayLoop } from "../../src/automations/cel-compile.js";
import { ApiError } from "../../src/core/errors.js";

const PATH = "automation.automationSteps[1].skipIfTrueCel";

const compile = (source: string, stepNames: readonly string[] = [], expectType?: ExpectedResult) =>
  checkExpression(source, PATH, { stepNames, expect: expectType });

const context = (trigger: unknown, steps: Record<string, unknown> = {}): CelContext => ({ trigger, webhook: null, steps });

/** Compiles with the context's steps as the earlier steps, then evaluates. */
const run = (source: string, trigger: unknown = {}, steps: Record<string, unknown> = {}, limits?: EvaluationLimits) =>
  evaluate(compile(source, Object.keys(steps)), context(trigger, steps), limits);

function saveError(source: string, stepNames: readonly string[] = [], expectType?: ExpectedResult): ApiError {
  try {
    compile(source, stepNames, expectType);
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error(`expected ${source} to be refused`);
}

function expectRefusedAt(source: string, position: number, stepNames: readonly string[] = []): ApiError {
  const error = saveError(source, stepNames);
  expect(error.status).toBe(400);
  expect(error.reason).toBe("CEL_INVALID");
  expect(error.metadata).toEqual({ path: PATH, position: String(position) });
  expect(error.violations).toHaveLength(1);
  expect(error.violations[0]?.field).toBe(PATH);
  return error;
}

function evaluationError(fn: () => unknown): CelEvaluationError {
  try {
    fn();
  } catch (error) {
    if (error instanceof CelEvaluationError) return error;
    throw error;
  }
  throw new Error("expected a CelEvaluationError");
}

const BUDGET_CODES: CelEvaluationErrorCode[] = ["COST_EXCEEDED", "TIMEOUT"];

describe("reading ctx", () => {
  const trigger = { userId: "u-1", appId: "a-1", "card-id": "c-9", "display name": "Ada", event: "card.lost" };

  it("reads trigger fields by selection and by index", () => {
    expect(run("ctx.trigger.userId", trigger)).toBe("u-1");
    expect(run('ctx.trigger["appId"]', trigger)).toBe("a-1");
    expect(run("ctx.trigger.userId == ctx.trigger['userId']", trigger)).toBe(true);
  });

  it("reads keys with dashes and spaces by index", () => {
    expect(run('ctx.trigger["card-id"]', trigger)).toBe("c-9");
    expect(run('ctx.trigger["display name"]', trigger)).toBe("Ada");
  });

  it("reads earlier steps' outputs", () => {
    const steps = { parse: { isLost: true } };
    expect(run("ctx.steps.parse.isLost", trigger, steps)).toBe(true);
    expect(run('!ctx.steps["parse"].isLost', trigger, steps)).toBe(false);
    expect(run('ctx.steps.parse.isLost && ctx.trigger.event == "card.lost"', trigger, steps)).toBe(true);
  });

  it("reads the delivery's event id and type, null for a fund event's run", () => {
    const delivery = { eventId: "72d3162e-cc78-11e3-81ab-4c9367dc0958", eventType: "push" };
    const withDelivery = (source: string) => evaluate(compile(source), { trigger, webhook: delivery, steps: {} });
    expect(withDelivery('ctx.webhook.eventType == "push"')).toBe(true);
    expect(withDelivery("ctx.webhook.eventId")).toBe(delivery.eventId);
    expect(evaluate(compile("ctx.webhook == null"), { trigger, webhook: { eventId: "evt_1", eventType: null }, steps: {} })).toBe(false);
    expect(run("ctx.webhook == null")).toBe(true);
  });

  it("accepts any JSON value as the trigger", () => {
    expect(run("ctx.trigger == 3", 3)).toBe(true);
    expect(run('ctx.trigger[1] == "b"', ["a", "b"])).toBe(true);
    expect(run("ctx.trigger == null", null)).toBe(true);
  });

  it("reads a `__proto__` key as data and never sees inherited properties", () => {
    const body: unknown = JSON.parse('{"__proto__": {"a": 1}, "x": 2}');
    expect(run('ctx.trigger["__proto__"].a == 1', body)).toBe(true);
    expect(run("has(ctx.trigger.constructor)", body)).toBe(false);
    expect(run("has(ctx.trigger.toString)", {})).toBe(false);
  });

  it("reads keys named `constructor`, `toString`... as data, at any depth and in steps' names", () => {
    const body: unknown = JSON.parse('{"constructor": null, "a": [{"constructor": 1, "valueOf": 2}], "toString": {"__proto__": 3}}');
    expect(run("ctx.trigger.constructor == null && size(ctx.trigger) == 3", body)).toBe(true);
    expect(run("ctx.trigger.a[0].constructor + ctx.trigger.a[0].valueOf + ctx.trigger.toString.__proto__", body)).toBe(6);
    expect(run("ctx.trigger.a[0].map(k, k)", body)).toEqual(["constructor", "valueOf"]);
    const steps = JSON.parse('{"__proto__": {"constructor": 1}, "constructor": {"x": 2}}') as Record<string, unknown>;
    expect(run('ctx.steps["__proto__"].constructor + ctx.steps.constructor.x', {}, steps)).toBe(3);
  });
});

describe("map literals", () => {
  const json = (source: string) => JSON.stringify(evaluateJson(compile(source), context({})));

  it("keep every string key, `__proto__` and `constructor` included", () => {
    expect(json('{"constructor": 1, "__proto__": {"prototype": 2}, "toString": 3}')).toBe('{"constructor":1,"__proto__":{"prototype":2},"toString":3}');
    expect(run('{"constructor": 1}.constructor + size({"__proto__": 1, "prototype": 2})')).toBe(3n);
    expect(run('{"__proto__": 1} == {"__proto__": 1} && {"__proto__": 1} != {"constructor": 1}')).toBe(true);
  });

  it("with only int, uint and bool keys, look numbers up across int and uint as before", () => {
    expect(run("{1: 'a'}[1u] + {2u: 'b'}[2] + {true: 'c'}[true]")).toBe("abc");
    expect(json("{1: 'a', 'b': 2}")).toBe('{"1":"a","b":2}');
  });
});

describe("numbers", () => {
  const trigger = { count: 3, amount: 10.5, whole: 10 };

  it("compares JSON numbers (CEL doubles) with int and double literals", () => {
    expect(run("ctx.trigger.count == 3", trigger)).toBe(true);
    expect(run("ctx.trigger.count == 3.0", trigger)).toBe(true);
    expect(run("ctx.trigger.count != 4", trigger)).toBe(true);
    expect(run("ctx.trigger.amount > 10", trigger)).toBe(true);
    expect(run("ctx.trigger.whole > 10", trigger)).toBe(false);
    expect(run("ctx.trigger.whole >= 10", trigger)).toBe(true);
    expect(run("ctx.trigger.count in [1, 2, 3]", trigger)).toBe(true);
    expect(run("type(ctx.trigger.count) == double", trigger)).toBe(true);
  });

  it("needs a conversion for integer arithmetic, as CEL has no mixed int/double arithmetic", () => {
    expect(evaluationError(() => run("ctx.trigger.count + 1", trigger)).code).toBe("EVALUATION_ERROR");
    expect(run("int(ctx.trigger.count) + 1", trigger)).toBe(4n);
    expect(run("ctx.trigger.count + 1.0", trigger)).toBe(4);
    expect(run("int(ctx.trigger.amount)", trigger)).toBe(10n);
  });

  it("reads in-memory step outputs exactly as stored JSON (ints become doubles)", () => {
    const steps = { count: { n: 3n, big: 2n ** 60n } };
    expect(run("type(ctx.steps.count.n) == double && ctx.steps.count.n == 3", {}, steps)).toBe(true);
    expect(run('ctx.steps.count.big == "1152921504606846976"', {}, steps)).toBe(true);
  });
});

describe("missing fields", () => {
  it("is an evaluation error, with the position of the field", () => {
    const error = evaluationError(() => run("ctx.trigger.missing == 1", { x: 1 }));
    expect(error.code).toBe("EVALUATION_ERROR");
    expect(error.position).toBe(12);
    expect(error.path).toBe(PATH);
    expect(error.message).toMatch(/missing/);
  });

  it("is tested with has() or read with an optional default", () => {
    expect(run("has(ctx.trigger.missing)", { x: 1 })).toBe(false);
    expect(run("has(ctx.trigger.x)", { x: 1 })).toBe(true);
    expect(run("has(ctx.trigger.x) && ctx.trigger.x == 1", { x: 1 })).toBe(true);
    expect(run('ctx.trigger.?missing.orValue("none")', { x: 1 })).toBe("none");
    expect(run("!has(ctx.trigger.missing) || ctx.trigger.missing == 1", { x: 1 })).toBe(true);
  });

  it("has() tells whether an earlier step produced an output", () => {
    const compiled = compile("has(ctx.steps.skipped)", ["skipped", "parse"]);
    expect(evaluate(compiled, context({}, { parse: {} }))).toBe(false);
    expect(evaluate(compiled, context({}, { skipped: { ok: true } }))).toBe(true);
  });
});

describe("save-time checks", () => {
  it("accepts the contract's examples", () => {
    expect(compile("!ctx.steps.parse.isLost", ["parse"], "bool").resultType).toBe("bool");
    expect(compile("ctx.trigger.userId", [], "string").resultType).toBe("dyn");
    expect(compile('ctx.trigger["appId"]', [], "string").source).toBe('ctx.trigger["appId"]');
    compile('"Card reported lost: " + ctx.trigger.event', [], "string");
    compile("timestamp(ctx.trigger.until)", [], "timestamp");
    compile('ctx.trigger.event == "card.lost"');
  });

  it("refuses a syntax error at its position", () => {
    const error = expectRefusedAt("ctx.trigger.x ==", 16);
    expect(error.message).toMatch(/syntax error/);
    expectRefusedAt("ctx.trigger.x @ 1", 14);
    expectRefusedAt('"unterminated', 0);
    expectRefusedAt("(ctx.trigger.x", 14);
  });

  it("counts the position in characters, not UTF-16 units", () => {
    expectRefusedAt('"😀😀" + 1 +', 10);
  });

  it("refuses unknown functions, variables and fields of ctx", () => {
    expectRefusedAt("foo(ctx.trigger.x)", 0);
    expectRefusedAt("ctx.trigger.x.frobnicate()", 0);
    expectRefusedAt("trigger.x == 1", 0);
    expectRefusedAt("ctx.trigers.x == 1", 4);
  });

  it("refuses type errors the checker can prove", () => {
    expect(expectRefusedAt('1 + "a"', 0).message).toMatch(/type error/);
    expectRefusedAt('ctx.trigger.x == 1 && "yes"', 0);
    expectRefusedAt("size(1)", 0);
  });

  it("refuses a result type the field cannot take", () => {
    expect(saveError('"yes"', [], "bool").metadata["position"]).toBe("0");
    expect(saveError("1 + 2", [], "string").reason).toBe("CEL_INVALID");
    expect(saveError("42", [], "timestamp").reason).toBe("CEL_INVALID");
    compile('"2026-12-01T00:00:00Z"', [], "timestamp");
  });

  it("refuses references to steps that are not earlier", () => {
    expectRefusedAt("ctx.steps.later.x", 10, ["parse"]);
    expectRefusedAt('ctx.steps["later"].x', 10, ["parse"]);
    expectRefusedAt("ctx.steps.parse.x && ctx.steps.?later.hasValue()", 32, ["parse"]);
    compile("ctx.steps.parse.x", ["parse"]);
    // A computed name cannot be checked statically: it fails when run, like any missing key.
    const computed = compile("ctx.steps[ctx.trigger.step].x", ["parse"]);
    expect(evaluationError(() => evaluate(computed, context({ step: "later" }, { parse: { x: 1 } }))).code).toBe("EVALUATION_ERROR");
  });

  it("does not mistake a comprehension variable named ctx for the context", () => {
    compile("[1].exists(ctx, ctx == 1)", []);
  });

  it("refuses expressions over 4096 characters, counted in characters", () => {
    expectRefusedAt(`"${"a".repeat(4095)}"`, 4096);
    compile(`"${"😀".repeat(4094)}"`);
  });

  it("refuses absurd expressions", () => {
    expect(saveError(Array.from({ length: 1200 }, () => "1").join("+")).message).toMatch(/too complex/);
    expect(saveError(`${"(".repeat(40)}1${")".repeat(40)}`).message).toMatch(/too complex/);
    expect(saveError(`[${Array.from({ length: 300 }, (_, i) => i).join(",")}]`).message).toMatch(/too complex/);
    const fourDeep = "[1].map(a, [1].map(b, [1].map(c, [1].map(d, a + b + c + d))))";
    expect(saveError(fourDeep).message).toMatch(/nested deeper than 3/);
    compile("[1].map(a, [1].map(b, [1].map(c, a + b + c)))");
  });

  it("refuses int literals outside int64 and accepts its bounds", () => {
    expectRefusedAt("9223372036854775808", 0);
    expect(run("-9223372036854775808")).toBe(-9223372036854775808n);
    expect(run("9223372036854775807")).toBe(9223372036854775807n);
  });

  it("refuses a literal regular expression that is not RE2", () => {
    expectRefusedAt('ctx.trigger.s.matches("(a)\\\\1")', 22);
    expectRefusedAt('ctx.trigger.s.matches("(?=a)")', 22);
    compile('ctx.trigger.s.matches("(?i)^card\\\\.")');
  });

  it("refuses the internal probe function", () => {
    expectRefusedAt("__automationCelProbe()", 0);
  });
});

describe("hostile input finishes with a CelEvaluationError", () => {
  it("a 64 KB body of 30,000 nested arrays", () => {
    const body = `{"x": 1, "deep": ${"[".repeat(30_000)}${"]".repeat(30_000)}}`;
    expect(body.length).toBeLessThanOrEqual(65_536);
    const trigger: unknown = JSON.parse(body);
    expect(run("ctx.trigger.x == 1", trigger)).toBe(true);
    expect(run("has(ctx.trigger.deep)", trigger)).toBe(true);
    // Function calls on dyn values inspect the first-element chain recursively: a clean error, not a crash.
    expect(evaluationError(() => run("size(ctx.trigger.deep)", trigger)).code).toBe("VALUE_TOO_LARGE");
    expect(evaluationError(() => run("ctx.trigger.deep == ctx.trigger.deep", trigger)).code).toBe("VALUE_TOO_LARGE");
    expect(evaluationError(() => evaluateJson(compile("ctx.trigger.deep"), context(trigger))).code).toBe("VALUE_TOO_LARGE");
  });

  it("strings doubled until they are huge", () => {
    const doublings = "cel.bind(b, a + a, cel.bind(c, b + b, cel.bind(d, c + c, cel.bind(e, d + d, cel.bind(f, e + e, f.size())))))";
    const error = evaluationError(() => run(`cel.bind(a, ctx.trigger.s + ctx.trigger.s, ${doublings})`, { s: "x".repeat(60_000) }));
    // The size bound stops it at c (480 KB), before the cost budget would.
    expect(error.code).toBe("VALUE_TOO_LARGE");
  });

  it("a join that would build a huge string, refused before it is built", () => {
    const trigger = { s: "x".repeat(60_000), list: Array.from({ length: 5_000 }, () => "a") };
    const error = evaluationError(() => run("ctx.trigger.list.join(ctx.trigger.s).size()", trigger));
    expect(error.code).toBe("VALUE_TOO_LARGE");
    expect(evaluationError(() => run("ctx.trigger.list.join(',').size()", trigger, {}, { maxCost: 5_000 })).code).toBe("COST_EXCEEDED");
  });

  it("nested comprehensions multiplying their work", () => {
    const hundred = `[${Array.from({ length: 100 }, (_, i) => i).join(",")}]`;
    const literal = `cel.bind(l, ${hundred}, l.exists(a, l.exists(b, l.exists(c, a + b + c < 0))))`;
    expect(evaluationError(() => run(literal, {}, {}, { timeoutMs: 10_000 })).code).toBe("COST_EXCEEDED");
    const list = Array.from({ length: 1_000 }, (_, i) => i);
    const overPayload = "ctx.trigger.list.map(x, ctx.trigger.list.map(y, ctx.trigger.list.map(z, x + y + z)))";
    expect([...BUDGET_CODES, "VALUE_TOO_LARGE"]).toContain(evaluationError(() => run(overPayload, { list })).code);
    expect(evaluationError(() => run(overPayload, { list }, {}, { maxCost: 10_000 })).code).toBe("COST_EXCEEDED");
  });

  it("a quadratic `in` over a large list runs out of time", () => {
    const list = Array.from({ length: 30_000 }, (_, i) => i);
    const error = evaluationError(() => run("ctx.trigger.list.filter(x, x in ctx.trigger.list).size()", { list }, {}, { timeoutMs: 50 }));
    expect(error.code).toBe("TIMEOUT");
  });

  it("long-running operations stop at the time budget (cooperative or hard), and evaluation works afterwards", () => {
    // Each `in` scans 300,000 elements: a few of them outlast the 1 ms budget before the clock is read again,
    // so the hard timeout (a vm timeout 50 ms after the budget) may be the one that stops it.
    const l = Array.from({ length: 300_000 }, (_, i) => i);
    const compiled = compile("ctx.steps.a.l.exists(x, (x - 1e9) in ctx.steps.a.l)", ["a"]);
    const error = evaluationError(() => evaluate(compiled, context({}, { a: { l } }), { maxCost: 100_000_000, timeoutMs: 1 }));
    expect(error.code).toBe("TIMEOUT");
    expect(activeBudget()).toBeUndefined();
    expect(evaluate(compiled, context({}, { a: { l: [1, 2] } }))).toBe(false);
  });

  it("only expressions with a comprehension run under the hard (vm) timeout: the others cannot loop", () => {
    for (const source of ["ctx.trigger.n * 2.0", 'ctx.trigger.s.matches("a+")', "cel.bind(x, ctx.trigger.l, x + x)", "1 in ctx.trigger.l"]) {
      expect(mayLoop(compile(source)), source).toBe(false);
    }
    for (const source of ["ctx.trigger.l.map(x, x)", "ctx.trigger.l.exists(x, x > 1) || true", "cel.bind(l, ctx.trigger.l, l.filter(x, x in l))", "[1].all(x, x > 0)"]) {
      expect(mayLoop(compile(source)), source).toBe(true);
    }
  });

  it("a budget error is not swallowed by `|| true` (CEL's commutative or)", () => {
    const hundred = `[${Array.from({ length: 100 }, (_, i) => i).join(",")}]`;
    const source = `size(cel.bind(l, ${hundred}, l.map(a, l.map(b, l.map(c, a))))) > 0 || true`;
    // A million elements: whichever bound is met first (cost, time, or the value's size) ends it.
    expect([...BUDGET_CODES, "VALUE_TOO_LARGE"]).toContain(evaluationError(() => run(source)).code);
    // ...and the same compiled expression evaluates normally afterwards.
    const compiled = compile("size(ctx.trigger.l.map(a, a)) > 0 || true");
    expect(evaluate(compiled, context({ l: [1, 2] }))).toBe(true);
  });

  it("catastrophic backtracking patterns run in linear time (RE2, not JavaScript RegExp)", () => {
    const s = `${"a".repeat(30_000)}!`;
    expect(run('ctx.trigger.s.matches("(a+)+$")', { s })).toBe(false);
    expect(run('ctx.trigger.s.matches("^(a|aa)+$")', { s })).toBe(false);
    expect(run("ctx.trigger.s.matches(ctx.trigger.p)", { s, p: "(x+x+)+y" })).toBe(false);
    expect(run("ctx.trigger.s.matches(ctx.trigger.p)", { s: "Card", p: "(?i)^card$" })).toBe(true);
  });

  it("a pattern from the payload that is not RE2 or is too long is an evaluation error", () => {
    expect(evaluationError(() => run("ctx.trigger.s.matches(ctx.trigger.p)", { s: "aa", p: "(a)\\1" })).code).toBe("EVALUATION_ERROR");
    expect(evaluationError(() => run("ctx.trigger.s.matches(ctx.trigger.p)", { s: "aa", p: "a".repeat(5_000) })).code).toBe("EVALUATION_ERROR");
  });

  it("a pattern's length is counted in characters (code points), as the contract counts lengths", () => {
    // 1,024 characters outside the BMP: 2,048 UTF-16 units.
    const emoji = "\u{1F600}";
    expect(run("ctx.trigger.s.matches(ctx.trigger.p)", { s: emoji.repeat(1024), p: emoji.repeat(1024) })).toBe(true);
    expect(evaluationError(() => run("ctx.trigger.s.matches(ctx.trigger.p)", { s: "", p: emoji.repeat(1025) })).message).toMatch(/longer than 1024 characters/);
  });

  it("integer overflow", () => {
    expect(evaluationError(() => run("1 + 9223372036854775807 * 2")).position).toBe(4);
    for (const source of [
      "9223372036854775807 + 1",
      "-9223372036854775808 - 1",
      "-9223372036854775808 / -1",
      "9223372036854775807 * 2",
      "int(ctx.trigger.big)",
      "int(1e19)",
      "2u - 3u",
    ]) {
      expect(evaluationError(() => run(source, { big: 1e20 })).code, source).toBe("EVALUATION_ERROR");
    }
  });

  it("division by zero", () => {
    expect(evaluationError(() => run("1 / 0")).message).toMatch(/division by zero/);
    expect(evaluationError(() => run("int(ctx.trigger.n) % 0", { n: 5 })).code).toBe("EVALUATION_ERROR");
    expect(evaluateJson(compile("ctx.trigger.n / 0.0"), context({ n: 1 }))).toBe("Infinity");
  });

  it("long duration strings (quadratic in the library's parser)", () => {
    expect(evaluationError(() => run("duration(ctx.trigger.d)", { d: "1".repeat(60_000) })).code).toBe("EVALUATION_ERROR");
    expect(run('duration("1h30m") == duration("90m")')).toBe(true);
    // 40 characters, 80 UTF-16 units: within the 64-character bound, refused as a duration.
    const wide = evaluationError(() => run("duration(ctx.trigger.d)", { d: "\u{1F600}".repeat(40) }));
    expect(wide.message).not.toMatch(/longer than/);
    expect(evaluationError(() => run("duration(ctx.trigger.d)", { d: "\u{1F600}".repeat(65) })).message).toMatch(/longer than 64 characters/);
  });

  it("values that are not JSON in the context", () => {
    expect(evaluationError(() => run("ctx.trigger.f", { f: () => 1 })).code).toBe("RESULT_TYPE");
  });
});

describe("results as JSON", () => {
  const json = (source: string, trigger: unknown = {}) => evaluateJson(compile(source), context(trigger));

  it("returns ints as bigint from evaluate, as JSON numbers from evaluateJson", () => {
    expect(run("1 + 2")).toBe(3n);
    expect(json("1 + 2")).toBe(3);
    expect(json("size(ctx.trigger.items)", { items: [1, 2] })).toBe(2);
  });

  it("writes ints beyond 2^53 as decimal strings, never a BigInt", () => {
    const value = json('{"max": 9223372036854775807, "min": -9223372036854775808, "safe": 9007199254740991, "u": 18446744073709551615u}');
    expect(value).toEqual({ max: "9223372036854775807", min: "-9223372036854775808", safe: 9007199254740991, u: "18446744073709551615" });
    expect(() => JSON.stringify(value)).not.toThrow();
  });

  it("converts every CEL type", () => {
    const value = json(
      "[1, 2u, 3.5, true, null, 'a', b'ab', timestamp('2026-01-01T10:00:00+02:00'), duration('90s'), {1: 'one', true: 'yes'}, type(1), optional.none(), optional.of(5), [[1]]]",
    );
    expect(value).toEqual([1, 2, 3.5, true, null, "a", "YWI=", "2026-01-01T08:00:00.000Z", "90s", { "1": "one", true: "yes" }, "int", null, 5, [[1]]]);
    expect(JSON.parse(JSON.stringify(value))).toEqual(value);
  });

  it("keeps the trigger's shape, including a __proto__ key as an own property", () => {
    const body: unknown = JSON.parse('{"a": {"b": [1, 2.5, "x"]}, "__proto__": {"c": 1}}');
    const value = json("ctx.trigger", body);
    expect(JSON.stringify(value)).toBe('{"a":{"b":[1,2.5,"x"]},"__proto__":{"c":1}}');
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });

  it("maps NaN and the infinities to strings", () => {
    expect(toJsonValue([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0])).toEqual(["NaN", "Infinity", "-Infinity", 0]);
  });

  it("an evaluateExpressions output can be read back by a later step", () => {
    const output = { count: json("size(ctx.trigger.items)", { items: [1, 2, 3] }), isLost: json('ctx.trigger.event == "card.lost"', { event: "card.lost" }) };
    expect(run("ctx.steps.parse.count == 3 && ctx.steps.parse.isLost", {}, { parse: output })).toBe(true);
  });
});

describe("typed evaluation", () => {
  it("evaluateBoolean requires a bool", () => {
    const steps = { parse: { isLost: true } };
    expect(evaluateBoolean(compile("!ctx.steps.parse.isLost", ["parse"], "bool"), context({}, steps))).toBe(false);
    const error = evaluationError(() => evaluateBoolean(compile("ctx.trigger.flag", [], "bool"), context({ flag: "yes" })));
    expect(error.code).toBe("RESULT_TYPE");
    expect(error.path).toBe(PATH);
    expect(error.message).toMatch(/bool, got string/);
  });

  it("evaluateString requires a string", () => {
    expect(evaluateString(compile('"Card reported lost: " + ctx.trigger.event', [], "string"), context({ event: "card.lost" }))).toBe(
      "Card reported lost: card.lost",
    );
    expect(evaluationError(() => evaluateString(compile("ctx.trigger.userId"), context({ userId: 42 }))).code).toBe("RESULT_TYPE");
  });

  it("evaluateTimestamp takes a CEL timestamp or an RFC 3339 string", () => {
    const compiled = compile("timestamp(ctx.trigger.until)", [], "timestamp");
    expect(evaluateTimestamp(compiled, context({ until: "2026-12-01T00:00:00Z" }))).toBe("2026-12-01T00:00:00.000Z");
    expect(evaluateTimestamp(compile("ctx.trigger.until"), context({ until: "2026-12-01T01:30:00+01:30" }))).toBe("2026-12-01T00:00:00.000Z");
    expect(
      evaluateTimestamp(compile('timestamp(ctx.trigger.from) + duration("24h")'), context({ from: "2026-11-30T00:00:00Z" })),
    ).toBe("2026-12-01T00:00:00.000Z");
    expect(evaluationError(() => evaluateTimestamp(compile("ctx.trigger.until"), context({ until: "2026-02-30T00:00:00Z" }))).code).toBe(
      "RESULT_TYPE",
    );
    expect(evaluationError(() => evaluateTimestamp(compile("ctx.trigger.until"), context({ until: 1764547200 }))).code).toBe("RESULT_TYPE");
    expect(evaluationError(() => evaluateTimestamp(compiled, context({ until: "next week" }))).code).toBe("EVALUATION_ERROR");
  });

  it("refuses objects that checkExpression did not return", () => {
    expect(() => evaluate({ source: "1", path: PATH, resultType: "int" }, context({}))).toThrow(CelEvaluationError);
  });
});
