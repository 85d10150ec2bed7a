// The arithmetic and formatting of the benchmark report (bench/report.ts). No timing here:
// benchmarks are a command (`npm run bench`), never a test; these figures are made up.
import { describe, expect, it } from "vitest";
import type { LoadResult } from "../../bench/load.js";
import {
  ceiling,
  checkTargets,
  combineRuns,
  depthSlowdown,
  floodSlowdown,
  formatMs,
  formatRatio,
  formatRps,
  markdownTable,
  NOTES_MARKER,
  percentile,
  pruningCost,
  ratio,
  renderMarkdown,
  rssSlope,
  scenarioRow,
  settingCost,
  validationCost,
  withKeptNotes,
  type Measured,
  type Report,
  type ScenarioKey,
  type Section,
} from "../../bench/report.js";

function load(rps: number, p99 = 5, errors: Partial<LoadResult["errors"]> = {}): LoadResult {
  return {
    requestsPerSecond: rps,
    total: rps * 10,
    durationSeconds: 10,
    latencyMs: { p50: 1.234, p99, p99_9: 150.4, max: 200, mean: 1.5 },
    errors: { unexpectedStatus: 0, socket: 0, timeouts: 0, ...errors },
    statuses: { "200": rps * 10 },
    cpu: { serverMicrosPerRequest: 180.4, serverCores: 0.9, loadGeneratorMicrosPerRequest: 60.2, databaseMicrosPerRequest: 200, otherMicrosPerRequest: 59.4, idleCores: 0.25 },
  };
}

const measured = (key: Measured["key"], rps: number, p99?: number, errors?: Partial<LoadResult["errors"]>): Measured => ({ key, label: key, result: load(rps, p99, errors), rssMiB: 120.4 });

describe("ratios", () => {
  it("relates requests per second to the baseline", () => {
    expect(ratio(2500, 10_000)).toBe(0.25);
    expect(ratio(10_000, 10_000)).toBe(1);
    expect(ratio(100, 0)).toBeNaN();
    expect(formatRatio(ratio(2500, 10_000))).toBe("0.25×");
    expect(formatRatio(Number.NaN)).toBe("–");
  });

  it("says how much slower the deep page is, and what validation costs", () => {
    expect(depthSlowdown(load(1200), load(1000))).toBeCloseTo(1.2);
    expect(depthSlowdown(load(1000), load(0))).toBeNaN();
    expect(validationCost(load(1000), load(850))).toBeCloseTo(0.15);
    expect(validationCost(load(1000), load(1100))).toBeCloseTo(-0.1);
  });

  it("says what a setting on costs (metrics, traces), from the mean of the runs with it and without", () => {
    expect(settingCost([load(1000), load(1100)], [load(1020), load(1010)])).toBeCloseTo(1 - 1015 / 1050);
    expect(settingCost([load(1000)], [load(1050)])).toBeCloseTo(-0.05);
    expect(settingCost([], [load(1000)])).toBeNaN();
  });

  it("says how much a flood by another credential raised a credential's p99", () => {
    expect(floodSlowdown(load(50, 4), load(50, 7))).toBeCloseTo(1.75);
    expect(floodSlowdown(load(50, 0), load(50, 7))).toBeNaN();
  });
});

describe("combineRuns", () => {
  it("takes runs as one: answers and errors summed, CPU per answer over all answers, percentiles averaged, the greatest max", () => {
    const a = measured("pruning-on", 100, 10, { timeouts: 1 });
    const b = measured("pruning-on", 300, 20);
    const slower = { ...b, result: { ...b.result, latencyMs: { ...b.result.latencyMs, max: 900 }, cpu: { ...b.result.cpu, serverMicrosPerRequest: 200, serverCores: 0.5 } } };
    const both = combineRuns([{ ...a, result: { ...a.result, cpu: { ...a.result.cpu, serverMicrosPerRequest: 100, serverCores: 0.3 } } }, slower], "both");
    expect(both.label).toBe("both");
    expect(both.result).toMatchObject({ total: 4000, durationSeconds: 20, requestsPerSecond: 200, errors: { timeouts: 1, socket: 0, unexpectedStatus: 0 }, statuses: { "200": 4000 } });
    expect(both.result.latencyMs).toMatchObject({ p99: 15, max: 900 });
    expect(both.result.cpu.serverMicrosPerRequest).toBeCloseTo(175);
    expect(both.result.cpu.serverCores).toBeCloseTo(0.4);
  });
});

describe("rssSlope", () => {
  it("is the least-squares trend of the second half's floor, in MiB a minute", () => {
    // Start-up growth in the first half is left out; 1 MiB every 10 s after it.
    const samples = [0, 10, 20, 30, 40, 50, 60].map((seconds) => ({ seconds, rssMiB: seconds < 30 ? seconds * 5 : 200 + (seconds - 30) / 10 }));
    expect(rssSlope(samples)).toBeCloseTo(6);
  });

  it("reads a collector's sawtooth over a flat floor as no growth, and a rising floor as growth", () => {
    const sawtooth = Array.from({ length: 61 }, (_, i) => ({ seconds: i * 5, rssMiB: 160 + (i % 6) * 15 }));
    expect(rssSlope(sawtooth)).toBeCloseTo(0);
    expect(rssSlope(sawtooth.map((x) => ({ ...x, rssMiB: x.rssMiB + x.seconds / 20 })))).toBeCloseTo(3, 0);
  });

  it("is NaN under two windows of two samples in the second half", () => {
    expect(rssSlope([{ seconds: 0, rssMiB: 1 }, { seconds: 10, rssMiB: 2 }])).toBeNaN();
  });
});

describe("percentile", () => {
  it("is the nearest rank", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile(values, 0)).toBe(1);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });
});

describe("formatting", () => {
  it("rounds milliseconds to the precision that matters", () => {
    expect(formatMs(0.8449)).toBe("0.84");
    expect(formatMs(12.345)).toBe("12.3");
    expect(formatMs(1234.5)).toBe("1,235");
    expect(formatMs(Number.NaN)).toBe("–");
    expect(formatRps(12345.6)).toBe("12,346");
  });

  it("draws an aligned Markdown table, numbers to the right", () => {
    expect(markdownTable(["Name", "n"], [["a", "1"], ["long name", "12,345"]]).split("\n")).toEqual([
      "| Name      |      n |",
      "| --------- | -----: |",
      "| a         |      1 |",
      "| long name | 12,345 |",
    ]);
  });

  it("puts a scenario on one row with its ratio and its errors by kind", () => {
    expect(scenarioRow(measured("hmac", 2000, 12.5), 8000)).toEqual(["hmac", "2,000", "0.25×", "1.23", "12.5", "150", "0", "120", "180", "0.90", "60", "200", "59", "0.25"]);
    expect(scenarioRow(measured("hmac", 2000, 12.5, { unexpectedStatus: 3, timeouts: 1 }), 8000)[6]).toBe("4 (3 status, 1 timeout)");
  });
});

describe("targets", () => {
  const section = (scenarios: Measured[]): Section => ({ dialect: "sqlite", database: "SQLite", scenarios });

  it("are met when intake has a short tail, pages stay flat and validation is cheap", () => {
    const checks = checkTargets(section([measured("hmac", 6000, 19.9), measured("list-first", 1100), measured("list-deep", 1000), measured("validation-off", 1000), measured("validation-on", 900)]), 2000, 10_000);
    expect(checks.map((c) => [c.target, c.measured, c.met])).toEqual([
      ["HMAC intake p99 < 20 ms at that load", "19.9 ms", true],
      ["HMAC intake: no error", "0", true],
      ["validation-off ≥ 0.50× the GET baseline's req/s", "0.50×", true],
      ["deep page no slower than 1.2× the first page", "1.10×", true],
      ["response validation costs ≤ 10.0% of throughput", "10.0%", true],
    ]);
  });

  it("are missed past any bound", () => {
    const checks = checkTargets(section([measured("hmac", 5999, 20, { socket: 1 }), measured("list-first", 1300), measured("list-deep", 1000), measured("validation-off", 999), measured("validation-on", 899)]), 2000, 10_000);
    expect(checks.every((c) => !c.met)).toBe(true);
  });

  it("hold the simple reads to a share of the GET baseline and the writes to one of the POST baseline, lower on PostgreSQL", () => {
    const scenarios = [measured("get-effective", 500), measured("policy-get", 499), measured("my-set-limit", 400), measured("suspend", 399)];
    expect(checkTargets(section(scenarios), 1000, 1000).map((c) => [c.target, c.met])).toEqual([
      ["get-effective ≥ 0.50× the GET baseline's req/s", true],
      ["policy-get ≥ 0.50× the GET baseline's req/s", false],
      ["my-set-limit ≥ 0.40× the POST baseline's req/s", true],
      ["suspend ≥ 0.40× the POST baseline's req/s", false],
    ]);
    const postgres = checkTargets({ dialect: "postgres", database: "PostgreSQL", scenarios: [measured("hmac", 400, 10), measured("policy-get", 350), measured("suspend", 249)] }, 1000, 1000);
    expect(postgres.filter((c) => c.target.includes("baseline")).map((c) => [c.target, c.met])).toEqual([
      ["policy-get ≥ 0.35× the GET baseline's req/s", true],
      ["suspend ≥ 0.25× the POST baseline's req/s", false],
    ]);
  });

  it("hold a credential's p99 during another's flood to twice its p99 alone, with no answer but 200", () => {
    const flood = (p99: number, errors?: Partial<LoadResult["errors"]>) => checkTargets(section([measured("rate-limit-alone", 50, 4), measured("rate-limit-flooded", 50, p99, errors)]), 1000);
    expect(flood(8).map((c) => [c.measured, c.met])).toEqual([
      ["2.00×", true],
      ["0", true],
    ]);
    expect(flood(8.1, { unexpectedStatus: 2 }).map((c) => [c.measured, c.met])).toEqual([
      ["2.02×", false],
      ["2", false],
    ]);
  });

  it("hold Authorize to its floor (on SQLite 0.6× its req/s and 1.7× its CPU per operation, on PostgreSQL 0.65× and 1.8×; 2× its p99) and to no overspend", () => {
    const spends = { approved: 10, declined: 5, captured: 3, windows: 2, overspent: 0, wronglyDeclined: 0, samples: [] };
    const sqlite = (rps: number, p99: number, overspent = 0) => checkTargets({ ...section([measured("spend-authorize-approved", rps, p99), measured("floor-authorize-approved", 1000, 10)]), spends: { ...spends, overspent } }, 10_000, 4000);
    expect(sqlite(600, 20).map((c) => [c.target, c.measured, c.met])).toEqual([
      ["spend-authorize-approved ≥ 0.60× its floor's req/s", "0.60×", true],
      ["spend-authorize-approved p99 ≤ 2.00× its floor's", "2.00×", true],
      ["spend-authorize-approved: CPU per operation (server, the database in it) ≤ 1.70× its floor's", "1.00×", true],
      ["floor-authorize-approved: no error", "0", true],
      ["spend-authorize-approved: no error", "0", true],
      ["Authorize: 0 overspend (every approved decision and every window within its limit)", "0", true],
      ["Authorize: no decline while the limit had room", "0", true],
    ]);
    expect(sqlite(599, 20.1, 1).map((c) => c.met)).toEqual([false, false, true, true, true, false, true]);
    // On PostgreSQL the CPU per operation is the server's and PostgreSQL's together.
    const real = measured("spend-authorize-declined", 1000, 80);
    const floor = measured("floor-authorize-declined", 1000, 80);
    floor.result.cpu = { ...floor.result.cpu, serverMicrosPerRequest: 100, databaseMicrosPerRequest: 130.4 };
    const postgres = checkTargets({ dialect: "postgres", database: "PostgreSQL", scenarios: [real, floor] }, 10_000, 4000);
    expect(postgres.filter((c) => c.target.includes("CPU")).map((c) => [c.target, c.measured, c.met])).toEqual([["spend-authorize-declined: CPU per operation (server and PostgreSQL) ≤ 1.80× its floor's", "1.65×", true]]);
    floor.result.cpu = { ...floor.result.cpu, serverMicrosPerRequest: 100, databaseMicrosPerRequest: 110 };
    const over = checkTargets({ dialect: "postgres", database: "PostgreSQL", scenarios: [real, floor] }, 10_000, 4000);
    expect(over.filter((c) => c.target.includes("CPU")).map((c) => [c.measured, c.met])).toEqual([["1.81×", false]]);
  });

  it("hold Capture and Release (against the capture floor) and the HMAC intake to 0.6× their floors' req/s (the spends to 0.65× on PostgreSQL), each to 1.7× its CPU, without a p99 bound", () => {
    const checks = checkTargets(section([measured("hmac", 590, 5), measured("floor-hmac", 1000, 1), measured("spend-capture", 700), measured("spend-release", 600), measured("floor-capture", 1000, 5, { socket: 2 })]), 10_000, 4000);
    expect(checks.filter((c) => c.target.includes("floor")).map((c) => [c.target, c.measured, c.met])).toEqual([
      ["hmac ≥ 0.60× its floor's req/s", "0.59×", false],
      ["hmac: CPU per operation (server, the database in it) ≤ 1.70× its floor's", "1.00×", true],
      ["spend-capture ≥ 0.60× its floor's req/s", "0.70×", true],
      ["spend-capture: CPU per operation (server, the database in it) ≤ 1.70× its floor's", "1.00×", true],
      ["spend-release ≥ 0.60× its floor's req/s", "0.60×", true],
      ["spend-release: CPU per operation (server, the database in it) ≤ 1.70× its floor's", "1.00×", true],
      ["floor-hmac: no error", "0", true],
      ["floor-capture: no error", "2", false],
    ]);
  });

  it("hold executions at half the maximum intake to p99 < 100 ms, the backlog after saturation to a 2 s drain, RSS to 250 MB and the soak to no growth", () => {
    const wait = { count: 1000, p50Ms: 5, maxMs: 120 };
    const flat = Array.from({ length: 61 }, (_, i) => ({ seconds: i * 5, rssMiB: 150 + (i % 2) }));
    const met = checkTargets({ ...section([]), steadyWait: { ...wait, p99Ms: 99, drainMs: 10, rate: 400 }, executionWait: { ...wait, p99Ms: 5000, drainMs: 2000 }, memory: { afterMiB: 238, maxMiB: 260 }, soak: { rate: 400, seconds: 300, samples: flat } }, 1000);
    expect(met.map((c) => [c.measured, c.met])).toEqual([
      ["99.0 ms", true],
      ["2.0 s", true],
      ["238 MiB (most seen 260 MiB)", true],
      ["+0.00 MiB/min", true],
    ]);
    const growing = flat.map((x) => ({ ...x, rssMiB: x.rssMiB + x.seconds / 30 }));
    const missed = checkTargets({ ...section([]), steadyWait: { ...wait, p99Ms: 100, drainMs: 10, rate: 400 }, executionWait: { ...wait, p99Ms: 5000, drainMs: 2001 }, memory: { afterMiB: 239, maxMiB: 239 }, soak: { rate: 400, seconds: 300, samples: growing } }, 1000);
    expect(missed.map((c) => c.met)).toEqual([false, false, false, false]);
  });

  it("hold pruning a backlog to 5% more CPU per answer of the intake at half its maximum (PostgreSQL's counted on PostgreSQL only), with no error", () => {
    const run = (key: "pruning-off" | "pruning-on", server: number, database: number, errors?: Partial<LoadResult["errors"]>): Measured => {
      const m = measured(key, 500, 10, errors);
      return { ...m, result: { ...m.result, cpu: { ...m.result.cpu, serverMicrosPerRequest: server, databaseMicrosPerRequest: database } } };
    };
    const off = run("pruning-off", 300, 100);
    expect(pruningCost(off.result, run("pruning-on", 315, 105).result, "postgres")).toBeCloseTo(0.05);
    expect(pruningCost(off.result, run("pruning-on", 290, 100).result, "postgres")).toBeCloseTo(-0.025);
    expect(pruningCost(off.result, run("pruning-on", 300, 200).result, "sqlite")).toBe(0);
    const postgres = (on: Measured) => checkTargets({ dialect: "postgres", database: "PostgreSQL", scenarios: [off, on] }, 1000).map((c) => [c.measured, c.met]);
    expect(postgres(run("pruning-on", 300, 119))).toEqual([
      ["4.8%", true],
      ["0", true],
    ]);
    expect(postgres(run("pruning-on", 300, 121, { timeouts: 1 }))).toEqual([
      ["5.2%", false],
      ["1", false],
    ]);
    expect(checkTargets(section([off, run("pruning-on", 316, 100)]), 1000).map((c) => [c.measured, c.met])).toEqual([
      ["5.3%", false],
      ["0", true],
    ]);
  });

  it("hold a steady flow beside a silent receiver to p99 < 250 ms, a fresh event behind a backlog to 1 s each way, and the intake with parked notifications to 90% of its req/s without", () => {
    const flow = { count: 6000, p50Ms: 5, maxMs: 300, drainMs: 10, rate: 200 };
    const fairness = (handed: number[], claimed: number[]) => ({
      backlog: 10_000,
      paths: [
        { path: "handed", rounds: handed.map((waitMs) => ({ waitMs, backlogLeft: 5000 })) },
        { path: "claimed", rounds: claimed.map((waitMs) => ({ waitMs, backlogLeft: 5000 })) },
      ],
    });
    const checks = (p99Ms: number, handed: number[], claimed: number[], onRps: number, errors?: Partial<LoadResult["errors"]>) =>
      checkTargets({ ...section([measured("intake-parked-off", 1000), measured("intake-parked-on", onRps, 10, errors)]), silentNotify: { events: 300, states: { AUTOMATION_EXECUTION_STATE_PARKED: 292 }, flow: { ...flow, p99Ms } }, backlogFairness: fairness(handed, claimed) }, 2000).map((c) => [c.measured, c.met]);
    expect(checks(249, [40, 1000], [900, 120], 900)).toEqual([
      ["249 ms", true],
      ["1,000 ms", true],
      ["900 ms", true],
      ["90.0%", true],
      ["0", true],
    ]);
    expect(checks(250, [40, 1001], [900, 1200], 899, { timeouts: 2 })).toEqual([
      ["250 ms", false],
      ["1,001 ms", false],
      ["1,200 ms", false],
      ["89.9%", false],
      ["2", false],
    ]);
  });

  it("are only checked for the scenarios that ran", () => {
    expect(checkTargets(section([measured("list-first", 100), measured("spend-capture", 100)]), 1000)).toEqual([]);
  });
});

describe("the report", () => {
  const report: Report = {
    info: {
      date: "2026-11-22T10:00:00Z",
      cpus: 2,
      cpuModel: "Test CPU",
      node: "v20.20.2",
      platform: "linux",
      autocannon: "9.0.0",
      connections: 20,
      durationSeconds: 10,
      warmupSeconds: 2,
      quick: false,
      serverEnv: "NODE_ENV=production",
      loadAverage: { before: 0.5, after: 1.5 },
    },
    baseline: measured("baseline", 10_000),
    sections: [
      {
        dialect: "postgres",
        database: "PostgreSQL 15",
        scenarios: [measured("hmac", 2500), measured("list-first", 1000), measured("list-deep", 800)],
        executionWait: { count: 25_000, p50Ms: 3, p99Ms: 40, maxMs: 90, drainMs: 12 },
        seed: { users: 10_000, rows: 1_000_000, ms: 30_000, analyzeMs: 500, method: "unnest" },
        walk: { pages: 9_999, ms: 60_000 },
      },
    ],
  };

  it("names the machine, the baseline and each database's figures", () => {
    const md = renderMarkdown(report);
    expect(md).toContain("2 CPUs (Test CPU)");
    expect(md).toContain("Node v20.20.2");
    expect(md).toContain("## PostgreSQL");
    expect(md).toContain("| hmac ");
    expect(md).toMatch(/\| hmac\s+\|\s+2,500 \|\s+0\.25× \|/);
    expect(md).toContain("p50 3.00 ms, p99 40.0 ms");
    expect(md).toContain("1,000,000 subject-app rows (10,000 users × 100 apps)");
    expect(md).toContain("9,999 pages in 60.0 s (6.00 ms a page");
    expect(md).toContain("Deep page vs first page: first page req/s ÷ deep page req/s = 1.25× (above 1: the deep page is slower)");
    expect(md).toMatch(/\| deep page no slower than 1\.2× the first page\s+\|\s+1\.25× \| \*\*no\*\* \|/);
  });

  it("says, when validation costs more than 10%, that production does not validate responses", () => {
    const withValidation = (on: number): Report => ({ ...report, sections: [{ ...report.sections[0]!, scenarios: [measured("validation-off", 1000), measured("validation-on", on)] }] });
    const policy = "responses are validated only in development and tests (NODE_ENV=production turns it off)";
    expect(renderMarkdown(withValidation(800))).toContain(`costs 20.0% of throughput. Above the 10% target: ${policy}`);
    expect(renderMarkdown(withValidation(800))).toMatch(/\| response validation costs ≤ 10\.0% of throughput\s+\|\s+20\.0% \| \*\*no\*\* \|/);
    expect(renderMarkdown(withValidation(900))).not.toContain(policy);
  });

  it("holds traces at 10% sampling to 10% of throughput, for Get and the HMAC intake, and says what was exported", () => {
    const runs = (off: ScenarioKey, on: ScenarioKey, rps: number, rpsOn: number) => [measured(off, rps), measured(on, rpsOn), measured(on, rpsOn), measured(off, rps)];
    const withTraces = (getOn: number, hmacOn: number): Report => ({
      ...report,
      sections: [{ ...report.sections[0]!, scenarios: [...runs("traces-get-off", "traces-get-on", 1000, getOn), ...runs("traces-hmac-off", "traces-hmac-on", 2000, hmacOn)], traceExports: { requests: 40, bytes: 3 * 1048576 } }],
    });
    const md = renderMarkdown(withTraces(950, 1700));
    expect(md).toMatch(/\| traces on at 10% sampling cost ≤ 10\.0% of SubjectAppLimitService\.Get's throughput\s+\|\s+5\.0% \|\s+yes \|/);
    expect(md).toMatch(/\| traces on at 10% sampling cost ≤ 10\.0% of the HMAC intake's throughput\s+\|\s+15\.0% \| \*\*no\*\* \|/);
    expect(md).toContain("Traces on at 10% sampling vs off (scenario 12: two servers started together, one exporting traces over OTLP/HTTP");
    expect(md).toContain("SubjectAppLimitService.Get costs 5.0% of its throughput (mean 950 req/s on, 1,000 off;");
    expect(md).toContain("exported 40 requests (3 MiB of protobuf)");
  });

  it("relates the server's CPU per accepted event to the baseline's", () => {
    const bare = measured("baseline", 10_000);
    bare.result.cpu = { ...bare.result.cpu, serverMicrosPerRequest: 60 };
    const md = renderMarkdown({ ...report, baseline: bare });
    expect(md).toContain("Server CPU per answer, HMAC intake: 180 µs, 3.01× the baseline's 60 µs");
    expect(md).toMatch(/\| baseline\s+\|\s+10,000 \|.*\|\s+60 \|\s+0\.90 \|\s+60 \|/);
    expect(renderMarkdown({ ...report, sections: [{ ...report.sections[0]!, scenarios: [measured("get-effective", 100)] }] })).not.toContain("Server CPU per answer");
  });

  it("puts the spend scenarios in a table of their own, with their ratio to the POST baseline, and the overspend check", () => {
    const md = renderMarkdown({
      ...report,
      postBaseline: measured("baseline-post", 8000),
      sections: [{ ...report.sections[0]!, scenarios: [measured("hmac", 2500), measured("spend-authorize-approved", 2000), measured("floor-authorize-approved", 8000, 2.5)], spends: { approved: 1200, declined: 300, captured: 700, windows: 200, overspent: 0, wronglyDeclined: 0, samples: [] } }],
    });
    expect(md).toContain("Spends (issue 15), each against the POST baseline (8,000 req/s):");
    expect(md).toMatch(/\| Scenario\s+\|\s+req\/s \| × POST baseline \|/);
    expect(md).toMatch(/\| spend-authorize-approved\s+\|\s+2,000 \|\s+0\.25× \|/);
    expect(md).toMatch(/\| hmac\s+\|\s+2,500 \|\s+0\.25× \|/);
    expect(md).toMatch(/\| baseline-post\s+\|\s+8,000 \|\s+0\.80× \|/);
    expect(md).toContain("1,200 approved and 300 declined decisions, 700 captured; 200 windows' final usage held against their limits; overspend: 0; declined with room left: 0.");
    expect(md).toContain("The floor servers (issue 33: bench/servers/floor.ts, the least a correct operation does, one round trip each), against the POST baseline:");
    expect(md).toMatch(/\| floor-authorize-approved\s+\|\s+8,000 \|\s+1\.00× \|/);
    expect(md).toMatch(/\| Operation vs its floor\s+\| req\/s \| floor req\/s \| × floor \| p99 ms \| floor p99 ms \| × floor p99 \| CPU µs\/op \(server \+ PostgreSQL\) \| floor CPU µs\/op \| × floor CPU \|/);
    expect(md).toMatch(/\| spend-authorize-approved\s+\|\s+2,000 \|\s+8,000 \|\s+0\.25× \|\s+5\.00 \|\s+2\.50 \|\s+2\.00× \|\s+380 \|\s+380 \|\s+1\.00× \|/);
    expect(md).toMatch(/\| spend-authorize-approved ≥ 0\.65× its floor's req\/s\s+\|\s+0\.25× \|\s+\*\*no\*\* \|/);
    expect(md).toContain(
      "The machine's ceiling for Authorize (approved): 500 µs of CPU per decision (server 180, load generator 60, PostgreSQL 200, the rest 59); with all 2 cores busy at these costs, at most 4,000 decisions/s, 0.50× the floor's measured 8,000 (target 0.65×). The target needs the server's CPU per decision at 65 µs or less with every core in use, or 192 µs on one core; 0.25 cores were idle.",
    );
  });

  it("computes what the machine's cores allow at the measured CPU per answer, and the server's budget for a target", () => {
    // 180.4 + 60.2 + 200 + 59.4 = 500 µs per answer: 2 cores answer 4,000 a second, half of 8,000.
    const c = ceiling(measured("spend-authorize-approved", 1000), 8000, 2, 0.5);
    expect(c.microsPerRequest).toBeCloseTo(500);
    expect(c.requestsPerSecond).toBeCloseTo(4000);
    expect(c.share).toBeCloseTo(0.5);
    // 4,000 a second leaves 500 µs of the 2 cores per answer, 180.4 of it for the server; one core, 250.
    expect(c.serverBudgetMicros.allCores).toBeCloseTo(180.4);
    expect(c.serverBudgetMicros.oneCore).toBeCloseTo(250);
  });

  it("says when the rest of the machine alone leaves a target no room", () => {
    const crowded = measured("spend-authorize-approved", 1000);
    crowded.result.cpu = { ...crowded.result.cpu, otherMicrosPerRequest: 2000 };
    const md = renderMarkdown({
      ...report,
      postBaseline: measured("baseline-post", 8000),
      sections: [{ ...report.sections[0]!, scenarios: [crowded, measured("floor-authorize-approved", 8000)], spends: { approved: 1, declined: 0, captured: 0, windows: 1, overspent: 0, wronglyDeclined: 0, samples: [] } }],
    });
    expect(md).toContain("With every core in use the rest of the machine alone leaves the target no room, or 192 µs on one core");
  });

  it("writes the round trips per operation as a table, and the execution waits and memory with their targets", () => {
    const section: Section = {
      ...report.sections[0]!,
      roundTrips: [
        { operation: "Authorize", requests: 20, roundTrips: 8, inTransaction: 7, transactions: 1, after: 0 },
        { operation: "Intake", requests: 20, roundTrips: 2, inTransaction: 0, transactions: 0, after: 1, range: [2, 3] },
      ],
      steadyWait: { count: 500, p50Ms: 4, p99Ms: 60, maxMs: 80, drainMs: 5, rate: 1250 },
      memory: { afterMiB: 180, maxMiB: 200 },
    };
    const md = renderMarkdown({ ...report, sections: [section] });
    expect(md).toMatch(/\| Authorize\s+\|\s+20 \|\s+8 \| 7 \(1 transaction\) \|\s+0 \|/);
    expect(md).toMatch(/\| Intake\s+\|\s+20 \|\s+2 \(2–3\) \|\s+none \|\s+1 \|/);
    expect(md).toContain("at a steady 1,250 events/s, half of scenario 1's intake (scenario 1b, 500 executions): p50 4.00 ms, p99 60.0 ms (target: under 100 ms)");
    expect(md).toContain("The backlog drained 12 ms after the load stopped (target: within 2.0 s).");
    expect(md).toContain("Server RSS after the full bench: 180 MiB");
  });

  it("says when the round trips could not be counted, with the run's figures, and counts it a target not met", () => {
    const section: Section = { ...report.sections[0]!, roundTripsFailed: "round trips of Capture: answers other than 200: {\"409\":20}" };
    const md = renderMarkdown({ ...report, sections: [section] });
    expect(md).toContain('were not counted: round trips of Capture: answers other than 200: {"409":20}');
    expect(md).toMatch(/\| Round trips counted per operation\s+\|\s+failed \| \*\*no\*\* \|/);
    expect(renderMarkdown(report)).not.toContain("Round trips counted per operation");
  });

  it("says what the silent receiver left parked, each round of the fresh events with the backlog left, and what parking cost the intake", () => {
    const section: Section = {
      ...report.sections[0]!,
      scenarios: [measured("intake-parked-off", 1000), measured("intake-parked-on", 990)],
      silentNotify: { events: 300, states: { AUTOMATION_EXECUTION_STATE_PARKED: 292, AUTOMATION_EXECUTION_STATE_RUNNING: 8 }, flow: { count: 6000, p50Ms: 4, p99Ms: 40, maxMs: 90, drainMs: 5, rate: 200 } },
      backlogFairness: { backlog: 10_000, paths: [{ path: "handed over", rounds: [{ waitMs: 12, backlogLeft: 8000 }, { waitMs: 30.5, backlogLeft: 7500 }] }] },
      parkedIntake: { maximum: 2000, rounds: 2, requests: 12_500, unavailable: 2_500, executions: 10_000, notDone: 3 },
    };
    const md = renderMarkdown({ ...report, sections: [section] });
    expect(md).toContain("that flow's accepted → done (6,000 executions) p50 4.00 ms, p99 40.0 ms (target: under 250 ms), max 90.0 ms. The silent automation's executions when the flow ended: 292 parked, 8 running.");
    expect(md).toContain("handed over: 12.0 ms (8,000 left), 30.5 ms (7,500 left).");
    expect(md).toContain("the receiver answered 12,500 requests, 2,500 of them 503, for 10,000 executions (3 not delivered after 4 attempts). With parking over without: req/s 990 vs 1,000");
  });

  it("says when other processes took more than a tenth of a core during a baseline, and nothing when the machine was quiet", () => {
    const busy = measured("baseline-post", 8000);
    busy.result.cpu = { ...busy.result.cpu, databaseMicrosPerRequest: 20, otherMicrosPerRequest: 34 };
    const quiet = measured("baseline", 10_000);
    quiet.result.cpu = { ...quiet.result.cpu, databaseMicrosPerRequest: 0, otherMicrosPerRequest: 9 };
    const md = renderMarkdown({ ...report, baseline: quiet, postBaseline: busy });
    expect(md).toContain("- During the POST baseline, other processes took 0.43 cores (more than 0.1): the machine was not quiet, the baseline read low, and the ratios to it read high.");
    expect(md).not.toContain("During the GET baseline");
  });

  it("gives each scenario's statements with --statements, per answer, a function's apart from the server's", () => {
    const authorize = measured("spend-authorize-approved", 1500);
    authorize.result.statements = [
      { query: "select * from spend_authorize($1, $2)", toplevel: true, callsPerAnswer: 1, microsPerCall: 278.04, microsPerAnswer: 278.1 },
      { query: "select a | b from `t`", toplevel: false, callsPerAnswer: 0.5, microsPerCall: 20, microsPerAnswer: 10 },
    ];
    const section: Section = { dialect: "postgres", database: "PostgreSQL 15", scenarios: [authorize, measured("hmac", 2500)] };
    const md = renderMarkdown({ ...report, sections: [section] });
    expect(md).toContain("spend-authorize-approved:");
    expect(md).toMatch(/\| `select \* from spend_authorize\(\$1, \$2\)` +\| +the server \| +1\.00 \| +278\.0 \| +278\.1 \|/);
    // A pipe or a backtick in a statement does not break the table.
    expect(md).toMatch(/\| `select a \\\| b from 't'` +\| +a function \| +0\.50 \| +20\.0 \| +10\.0 \|/);
    expect(renderMarkdown(report)).not.toContain("PostgreSQL's statements per scenario");
  });

  it("keeps the hand-written notes of the previous file", () => {
    expect(withKeptNotes("# New\n", undefined)).toBe(`# New\n\n${NOTES_MARKER}\n`);
    const previous = `# Old figures\n\n${NOTES_MARKER}\n\n## Profiles\nbefore/after\n`;
    expect(withKeptNotes("# New\n", previous)).toBe(`# New\n\n${NOTES_MARKER}\n\n## Profiles\nbefore/after\n`);
  });
});
