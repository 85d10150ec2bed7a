// The figures of a run as Markdown (bench/RESULTS.md, and the console): pure functions only, so
// that the ratio and percentile arithmetic and the formatting are unit-tested (test/bench).
import { totalErrors, type LoadResult } from "./load.js";

export type ScenarioKey =
  | "baseline"
  | "hmac"
  | "hmac-steady"
  | "jwt-es256"
  | "jwt-eddsa"
  | "duplicate"
  | "my-set-limit"
  | "suspend"
  | "get-effective"
  | "policy-get"
  | "list-first"
  | "list-deep"
  | "validation-off"
  | "validation-on"
  | "rate-limit-alone"
  | "rate-limit-flooded"
  | "rate-limit-flood"
  | "baseline-post"
  | "spend-authorize-approved"
  | "spend-authorize-declined"
  | "spend-authorize-threshold"
  | "spend-capture"
  | "spend-release"
  | "spend-reverse"
  | "spend-get-effective"
  | "metrics-hmac-off"
  | "metrics-hmac-on"
  | "metrics-get-off"
  | "metrics-get-on"
  | "pruning-off"
  | "pruning-on"
  | "traces-get-off"
  | "traces-get-on"
  | "traces-hmac-off"
  | "traces-hmac-on"
  | "audit-set-limit-off"
  | "audit-set-limit-on"
  | "audit-suspend-off"
  | "audit-suspend-on"
  | "spend-authorize-fired"
  | "floor-hmac"
  | "floor-authorize-approved"
  | "floor-authorize-declined"
  | "floor-capture"
  | "notify-silent"
  | "backlog-fairness"
  | "intake-parked-off"
  | "intake-parked-on";

/**
 * Issue 33: the database-bound operations and the floor each is held against, the least any
 * correct implementation does (bench/servers/floor.ts), measured in the same run. Release and
 * Reverse lock and update the same rows as a capture: they are held against the capture floor.
 */
export const FLOORS = {
  hmac: "floor-hmac",
  "spend-authorize-approved": "floor-authorize-approved",
  "spend-authorize-declined": "floor-authorize-declined",
  "spend-capture": "floor-capture",
  "spend-release": "floor-capture",
  "spend-reverse": "floor-capture",
} as const satisfies Partial<Record<ScenarioKey, ScenarioKey>>;
export const FLOOR_KEYS: readonly ScenarioKey[] = [...new Set(Object.values(FLOORS))];

/** Targets against the floor: throughput at least, p99 (Authorize only) and CPU per operation at most, each a multiple of the floor's. */
export interface FloorTarget {
  throughput: number;
  p99?: number;
  cpu: number;
}

/**
 * Each operation's targets: issue 33's (0.6× the throughput, Authorize's p99 2×, 1.7× the CPU), but
 * for the spends on PostgreSQL, issue 46's, with the cap per authorization and the count per window
 * in force on the benchmarked rows: 0.65× the throughput, and Authorize's CPU 1.8× (the server's and
 * PostgreSQL's).
 */
export function floorTarget(key: ScenarioKey, dialect: Section["dialect"]): FloorTarget {
  const spend = key.startsWith("spend-") && dialect === "postgres";
  const authorize = key.startsWith("spend-authorize");
  return { throughput: spend ? 0.65 : 0.6, ...(authorize ? { p99: 2 } : {}), cpu: spend && authorize ? 1.8 : 1.7 };
}

/** Selections of --only that name several scenarios. */
export const SCENARIO_GROUPS: Readonly<Record<string, readonly ScenarioKey[]>> = {
  pruning: ["pruning-off", "pruning-on"],
  floor: FLOOR_KEYS,
  "intake-with-parked": ["intake-parked-off", "intake-parked-on"],
  delivery: ["notify-silent", "backlog-fairness", "intake-parked-off", "intake-parked-on"],
};

/** The spend scenarios: their ratios are to the POST baseline (a bare `express.json()` route). */
export const SPEND_KEYS: readonly ScenarioKey[] = ["spend-authorize-approved", "spend-authorize-declined", "spend-authorize-threshold", "spend-authorize-fired", "spend-capture", "spend-release", "spend-reverse", "spend-get-effective"];

/** Issue 31: Authorize with a usage-threshold trigger on every window keeps at least this share of its rate without one. */
export const FUND_EVENTS_SHARE = 0.85;

/** Issue 31: a fund event's execution is done within this p99 of the decision that fired it, at half Authorize's maximum rate. */
export const FUND_EVENT_P99_MS = 100;

/**
 * What the database holds after the spend scenarios, read straight from it: the decisions made, and
 * every way one could have overspent. `overspent` counts approved decisions whose window usage
 * (the decision's own, and the window's final sums) passed its limit, and windows of the declined
 * scenario that approved more than the limit admits; `wronglyDeclined` those that declined before
 * the limit was reached.
 */
export interface SpendCheck {
  approved: number;
  declined: number;
  captured: number;
  /** Windows whose final spent + held was held against their limit. */
  windows: number;
  overspent: number;
  wronglyDeclined: number;
  /** The first few overspends or wrong declines found, for the report. */
  samples: string[];
}

export interface Measured {
  key: ScenarioKey;
  label: string;
  result: LoadResult;
  /** RSS of the server process at the end of the scenario, in MiB. */
  rssMiB: number;
}

export interface ExecutionWait {
  /** Executions of the scenario-1 automation. */
  count: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** From the end of the load until the last execution finished. */
  drainMs: number;
  /** Executions that did not end DONE, and what one of them recorded. */
  notDone?: { count: number; sample: string };
}

/** RSS samples of a server under a steady intake (--soak), and what they say. */
export interface Soak {
  /** Events a second sent, and for how long. */
  rate: number;
  seconds: number;
  samples: RssSample[];
}

export interface RssSample {
  /** Since the soak started. */
  seconds: number;
  rssMiB: number;
}

/** Round trips to the database of one operation, per request (the median over the requests sent). */
export interface RoundTrips {
  operation: string;
  requests: number;
  /** Statements sent while the request was answered. */
  roundTrips: number;
  /** Of those, inside transactions (BEGIN and COMMIT counted), and how many transactions. */
  inTransaction: number;
  transactions: number;
  /** Statements its context sent after the answer (the execution an accepted event started). */
  after: number;
  /** When the requests differed: the least and most round trips seen. */
  range?: [number, number];
}

export interface Section {
  dialect: "sqlite" | "postgres";
  database: string;
  scenarios: Measured[];
  /** Under scenario 1's saturating load. */
  executionWait?: ExecutionWait;
  /** Scenario 1b: HMAC intake at a fixed rate (half of scenario 1's), its executions only. */
  steadyWait?: ExecutionWait & { rate: number };
  /** Scenario 9: Authorize at half its maximum rate, each decision firing an automation on authorized spends: those executions. */
  fundEventWait?: ExecutionWait & { rate: number };
  /** RSS of the main server after every scenario of the section, and the most any server of it reached. */
  memory?: { afterMiB: number; maxMiB: number };
  soak?: Soak;
  roundTrips?: RoundTrips[];
  /** Why the round trips could not be counted: the run's figures are written all the same. */
  roundTripsFailed?: string;
  seed?: { users: number; rows: number; ms: number; analyzeMs: number; method: string };
  /** The walk to the deep page: pages fetched and how long it took. */
  walk?: { pages: number; ms: number };
  spends?: SpendCheck;
  /** Scenario 12: what the traced server exported to the bench's receiver. */
  traceExports?: { requests: number; bytes: number };
  /** Scenario 11: the expired executions before the run with pruning, and what it removed while measured. */
  pruning?: PruningRun;
  silentNotify?: SilentNotify;
  backlogFairness?: BacklogFairness;
  parkedIntake?: ParkedIntake;
}

/** Scenario 14: notifications queued to a receiver that never answers, beside a steady flow of another automation's events. */
export interface SilentNotify {
  /** Events sent to the silent automation before the flow, and its executions by state when the flow ended. */
  events: number;
  states: Record<string, number>;
  /** The steady flow's executions, accepted → done, at `rate` events a second. */
  flow: ExecutionWait & { rate: number };
}

/** Scenario 15: fresh events of other automations behind a backlog of one automation's pending executions. */
export interface BacklogFairness {
  backlog: number;
  /** Each way a fresh execution reaches the worker, and each round's: accepted → done, and the backlog's executions not done by then. */
  paths: Array<{ path: string; rounds: Array<{ waitMs: number; backlogLeft: number }> }>;
}

/** Scenario 16: the notifying intake's maximum (req/s, half of it sent), what the receiver of the runs with parking answered, and how their executions ended. */
export interface ParkedIntake {
  maximum: number;
  rounds: number;
  requests: number;
  unavailable: number;
  executions: number;
  /** Executions not DONE once drained (out of attempts). */
  notDone: number;
}

export interface PruningRun {
  /** Expired executions seeded (all but their automation's newest are due), and how old. */
  backlog: number;
  ageDays: number;
  /** Runs of each kind (with nothing due, with the backlog due), in the order off, on, on, off, ... */
  rounds: number;
  /** Removed during the runs with pruning (warm-ups included), and over how long. */
  removed: number;
  seconds: number;
  /** Still due when the last run with pruning ended: above 0, pruning ran the whole time. */
  left: number;
}

export interface RunInfo {
  date: string;
  cpus: number;
  cpuModel: string;
  node: string;
  platform: string;
  autocannon: string;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  quick: boolean;
  /** The server's environment that matters for the figures. */
  serverEnv: string;
  /** 1-minute load average before the run and at its end: other work on the machine skews figures. */
  loadAverage: { before: number; after: number };
}

export interface Report {
  info: RunInfo;
  baseline: Measured;
  /** POST / through `express.json()` with the Authorize body and headers: what the spend scenarios are held against. */
  postBaseline?: Measured;
  sections: Section[];
}

export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean;
}

// ---- arithmetic ------------------------------------------------------------------------------

/** Requests per second relative to the baseline's (NaN when there is no baseline figure). */
export const ratio = (rps: number, baselineRps: number): number => (baselineRps > 0 ? rps / baselineRps : Number.NaN);

/** The nearest-rank percentile `p` (0-100) of ascending `sorted` values; NaN for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** How much slower the deep page is than the first: first req/s over deep req/s (1 = as fast). */
export const depthSlowdown = (first: LoadResult, deep: LoadResult): number => (deep.requestsPerSecond > 0 ? first.requestsPerSecond / deep.requestsPerSecond : Number.NaN);

/** The issue's target for the cost of response validation. */
const VALIDATION_BUDGET = 0.1;

/** The share of throughput response validation costs: 1 - on/off (0.1 = 10% fewer requests/s). */
export const validationCost = (off: LoadResult, on: LoadResult): number => (off.requestsPerSecond > 0 ? 1 - on.requestsPerSecond / off.requestsPerSecond : Number.NaN);

type InTurnRuns = Record<string, { name: string; off: ScenarioKey; on: ScenarioKey }>;

/** Scenario 10: what metrics on may cost (issue 30), and its runs by request and setting. */
const METRICS_BUDGET = 0.03;
export const METRICS_RUNS = {
  hmac: { name: "the HMAC intake", off: "metrics-hmac-off", on: "metrics-hmac-on" },
  get: { name: "SubjectAppLimitService.Get", off: "metrics-get-off", on: "metrics-get-on" },
} as const satisfies InTurnRuns;
export const METRICS_KEYS: readonly ScenarioKey[] = Object.values(METRICS_RUNS).flatMap((r) => [r.off, r.on]);

/** Scenario 12: what traces on at 10% sampling may cost (issue 30), and its runs likewise. */
const TRACES_BUDGET = 0.1;
export const TRACES_RUNS = {
  hmac: { name: "the HMAC intake", off: "traces-hmac-off", on: "traces-hmac-on" },
  get: { name: "SubjectAppLimitService.Get", off: "traces-get-off", on: "traces-get-on" },
} as const satisfies InTurnRuns;
export const TRACES_KEYS: readonly ScenarioKey[] = Object.values(TRACES_RUNS).flatMap((r) => [r.off, r.on]);

/** Scenario 13: what the audit record may cost a change (issue 31), and its runs likewise. */
const AUDIT_BUDGET = 0.1;
export const AUDIT_RUNS = {
  setLimit: { name: "MyFundLimitsService.SetLimit", off: "audit-set-limit-off", on: "audit-set-limit-on" },
  suspend: { name: "SubjectAppLimitService.Suspend", off: "audit-suspend-off", on: "audit-suspend-on" },
} as const satisfies InTurnRuns;
export const AUDIT_KEYS: readonly ScenarioKey[] = Object.values(AUDIT_RUNS).flatMap((r) => [r.off, r.on]);

/** The settings measured in turn against themselves off, on two servers started together (bench/scenarios.ts). */
const IN_TURN = [
  { scenario: 10, setting: "metrics on", budget: METRICS_BUDGET, runs: METRICS_RUNS, title: "Metrics on vs off", how: "two servers started together, one with METRICS_PORT and scraped every second meanwhile" },
  {
    scenario: 12,
    setting: "traces on at 10% sampling",
    budget: TRACES_BUDGET,
    runs: TRACES_RUNS,
    title: "Traces on at 10% sampling vs off",
    how: "two servers started together, one exporting traces over OTLP/HTTP (protobuf) to a receiver in the bench, OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=0.1",
  },
  {
    scenario: 13,
    setting: "the audit record",
    budget: AUDIT_BUDGET,
    runs: AUDIT_RUNS,
    title: "The audit record on vs off",
    how: "one server; off, a trigger the bench adds to the database drops each audit event's insert (the server still builds it and sends it in the change's statement), so what is compared is the record's storage: its row, its six indexes and its share of the commit (on SQLite, its row in the inbox and its share of the batches that move the inbox into the trail)",
  },
] as const;

const mean = (values: readonly number[]): number => (values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : Number.NaN);

/** The share of throughput a setting costs: 1 - the mean req/s of the runs with it on over those without (0.03 = 3% fewer). */
export const settingCost = (off: readonly LoadResult[], on: readonly LoadResult[]): number => {
  const without = mean(off.map((r) => r.requestsPerSecond));
  return without > 0 ? 1 - mean(on.map((r) => r.requestsPerSecond)) / without : Number.NaN;
};

/** The issue's bound on what a credential over its rate limit may do to another's p99. */
const FLOOD_BUDGET = 2;

/** How much a flood by another credential raised this credential's p99: flooded over alone (1 = not at all). */
export const floodSlowdown = (alone: LoadResult, flooded: LoadResult): number => (alone.latencyMs.p99 > 0 ? flooded.latencyMs.p99 / alone.latencyMs.p99 : Number.NaN);

/**
 * Runs of one scenario taken as one, as if measured together: answers, statuses and errors summed;
 * answers a second and CPU per answer over all the answers; cores the mean; latency percentiles
 * the mean of the runs' (an approximation: the runs' histograms are not kept), the max the greatest.
 */
export function combineRuns(runs: readonly Measured[], label: string): Measured {
  const first = runs[0];
  if (!first) throw new Error("combineRuns: no run");
  const results = runs.map((m) => m.result);
  const total = results.reduce((a, r) => a + r.total, 0);
  const durationSeconds = results.reduce((a, r) => a + r.durationSeconds, 0);
  const perAnswer = (pick: (r: LoadResult) => number) => (total > 0 ? results.reduce((a, r) => a + pick(r) * r.total, 0) / total : Number.NaN);
  const mean = (pick: (r: LoadResult) => number) => results.reduce((a, r) => a + pick(r), 0) / results.length;
  const sum = (pick: (r: LoadResult) => number) => results.reduce((a, r) => a + pick(r), 0);
  const statuses: Record<string, number> = {};
  for (const r of results) for (const [status, n] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  return {
    key: first.key,
    label,
    rssMiB: runs[runs.length - 1]!.rssMiB,
    result: {
      requestsPerSecond: durationSeconds > 0 ? total / durationSeconds : Number.NaN,
      total,
      durationSeconds,
      latencyMs: { p50: mean((r) => r.latencyMs.p50), p99: mean((r) => r.latencyMs.p99), p99_9: mean((r) => r.latencyMs.p99_9), max: Math.max(...results.map((r) => r.latencyMs.max)), mean: perAnswer((r) => r.latencyMs.mean) },
      errors: { unexpectedStatus: sum((r) => r.errors.unexpectedStatus), socket: sum((r) => r.errors.socket), timeouts: sum((r) => r.errors.timeouts) },
      statuses,
      cpu: {
        serverMicrosPerRequest: perAnswer((r) => r.cpu.serverMicrosPerRequest),
        serverCores: mean((r) => r.cpu.serverCores),
        loadGeneratorMicrosPerRequest: perAnswer((r) => r.cpu.loadGeneratorMicrosPerRequest),
        databaseMicrosPerRequest: perAnswer((r) => r.cpu.databaseMicrosPerRequest),
        otherMicrosPerRequest: perAnswer((r) => r.cpu.otherMicrosPerRequest),
        idleCores: mean((r) => r.cpu.idleCores),
      },
    },
  };
}

/** Runs of a setting measured in turn against itself, `rounds` each way: off, on, on, off, … (true: on). */
export const inTurn = (rounds: number): boolean[] => Array.from({ length: rounds }, (_, i) => (i % 2 === 0 ? [false, true] : [true, false])).flat();

/** The issue's bound on what pruning a backlog of expired executions may cost the intake at half its maximum. */
export const PRUNING_BUDGET = 0.05;

/**
 * What pruning cost the intake at a fixed rate: the CPU per answer of the server and the database
 * together (on SQLite the server's alone: the database is in it, and PostgreSQL's processes then
 * belong to something else), with pruning over without, less 1 (0.05 = 5% more). At a fixed rate
 * the answers a second do not move while there is room; the CPU pruning takes is what the intake's
 * maximum loses.
 */
export const pruningCost = (without: LoadResult, withPruning: LoadResult, dialect: Section["dialect"]): number => {
  const cpu = (r: LoadResult) => cpuPerOperation(r, dialect);
  return cpu(without) > 0 ? cpu(withPruning) / cpu(without) - 1 : Number.NaN;
};

/**
 * CPU per answer of the server and the database together, in µs: on PostgreSQL the server's and
 * PostgreSQL's processes'; on SQLite the server's alone (the database is in it, and PostgreSQL's
 * processes then belong to something else).
 */
export const cpuPerOperation = (r: LoadResult, dialect: Section["dialect"]): number => r.cpu.serverMicrosPerRequest + (dialect === "postgres" ? r.cpu.databaseMicrosPerRequest : 0);

/** An operation against its floor (issue 33): its throughput, p99 and CPU per operation, each over the floor's. */
export interface FloorComparison {
  operation: Measured;
  floor: Measured;
  throughput: number;
  p99: number;
  cpu: number;
}

/** Each operation of the section measured with its floor, against it. */
export function floorComparisons(section: Section): FloorComparison[] {
  return (Object.entries(FLOORS) as [ScenarioKey, ScenarioKey][]).flatMap(([key, floorKey]) => {
    const operation = find(section, key);
    const floor = find(section, floorKey);
    if (!operation || !floor) return [];
    const [o, f] = [operation.result, floor.result];
    return [{ operation, floor, throughput: ratio(o.requestsPerSecond, f.requestsPerSecond), p99: f.latencyMs.p99 > 0 ? o.latencyMs.p99 / f.latencyMs.p99 : Number.NaN, cpu: cpuPerOperation(o, section.dialect) / cpuPerOperation(f, section.dialect) }];
  });
}

/** The issue's bounds on executions: accepted → done p99 at half the maximum intake, and the backlog's drain after saturation. */
export const EXECUTION_TARGETS = { steadyP99Ms: 100, drainMs: 2_000 } as const;

/**
 * The issue's bounds on notifications: a steady flow's accepted → done p99 beside a receiver that
 * never answers (scenario 14); a fresh event behind another automation's backlog done within
 * (scenario 15); the intake at half its maximum with notifications parked, its share of the
 * throughput without (scenario 16).
 */
export const DELIVERY_TARGETS = { silentFlowP99Ms: 250, freshEventMs: 1_000, parkedIntakeShare: 0.9 } as const;

/** An execution's state without its enum's prefix, in lower case: "parked". */
const stateName = (state: string) => state.replace(/^AUTOMATION_EXECUTION_STATE_/, "").toLowerCase();

/** The issue's bound on the server's RSS after the full bench: 250 MB, in MiB. */
export const RSS_BUDGET_MIB = 250e6 / 2 ** 20;

/**
 * What "no growth over the soak" allows: the trend of the RSS's floor over the soak's second half
 * (after start-up and the first collections have settled), in MiB a minute. Below it, what moves is
 * the collector.
 */
export const SOAK_GROWTH_BUDGET = 1;

/** Windows of the second half whose lowest samples make the floor. */
const FLOOR_WINDOWS = 5;

/**
 * The trend of the RSS's floor over the second half of the samples, in MiB a minute: the least-squares
 * slope through the lowest sample of each of a few equal windows. RSS swings with the collector
 * (tens of MiB between collections), which a fit through every sample reads as growth or shrinking
 * depending on where the soak ended; what a leak raises is the level it falls back to. NaN when the
 * second half has fewer than two samples a window for two windows.
 */
export function rssSlope(samples: readonly RssSample[]): number {
  const last = samples[samples.length - 1];
  if (!last) return Number.NaN;
  const from = last.seconds / 2;
  const half = samples.filter((s) => s.seconds >= from);
  const windows = Math.min(FLOOR_WINDOWS, Math.floor(half.length / 2));
  if (windows < 2) return Number.NaN;
  const width = (last.seconds - from) / windows;
  const floors: RssSample[] = [];
  for (let w = 0; w < windows; w++) {
    const inWindow = half.filter((s) => Math.min(windows - 1, Math.floor((s.seconds - from) / width)) === w);
    const lowest = inWindow.reduce<RssSample | undefined>((low, s) => (!low || s.rssMiB < low.rssMiB ? s : low), undefined);
    if (lowest) floors.push(lowest);
  }
  if (floors.length < 2) return Number.NaN;
  const mx = floors.reduce((a, s) => a + s.seconds, 0) / floors.length;
  const my = floors.reduce((a, s) => a + s.rssMiB, 0) / floors.length;
  const sxx = floors.reduce((a, s) => a + (s.seconds - mx) ** 2, 0);
  const sxy = floors.reduce((a, s) => a + (s.seconds - mx) * (s.rssMiB - my), 0);
  return sxx > 0 ? (sxy / sxx) * 60 : Number.NaN;
}

// ---- formatting ------------------------------------------------------------------------------

export const formatRps = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–");
export const formatRatio = (r: number): string => (Number.isFinite(r) ? `${r.toFixed(2)}×` : "–");
export const formatPercent = (r: number): string => (Number.isFinite(r) ? `${(r * 100).toFixed(1)}%` : "–");
export const formatMiB = (n: number): string => (Number.isFinite(n) ? `${Math.round(n)}` : "–");
export const formatMicros = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–");
export const formatCores = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : "–");

/** Milliseconds with the precision that matters at their size: 0.84, 12.3, 145. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return "–";
  if (ms < 10) return ms.toFixed(2);
  if (ms < 100) return ms.toFixed(1);
  return Math.round(ms).toLocaleString("en-US");
}

export const formatSlope = (miBPerMinute: number): string => (Number.isFinite(miBPerMinute) ? `${miBPerMinute >= 0 ? "+" : ""}${miBPerMinute.toFixed(2)} MiB/min` : "–");

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return "–";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A Markdown table; numeric-looking columns (every cell but the first) are right-aligned. */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length), 3));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`;
  return [line(headers), rule, ...rows.map(line)].join("\n");
}

const SCENARIO_HEADERS = ["Scenario", "req/s", "× baseline", "p50 ms", "p99 ms", "p99.9 ms", "errors", "RSS MiB", "server CPU µs/req", "server cores", "load gen. CPU µs/req", "PostgreSQL CPU µs/req", "other CPU µs/req", "idle cores"] as const;

export function scenarioRow(m: Measured, baselineRps: number): string[] {
  const r = m.result;
  const errors = totalErrors(r);
  const detail = errors > 0 ? ` (${[r.errors.unexpectedStatus && `${r.errors.unexpectedStatus} status`, r.errors.socket && `${r.errors.socket} socket`, r.errors.timeouts && `${r.errors.timeouts} timeout`].filter(Boolean).join(", ")})` : "";
  return [m.label, formatRps(r.requestsPerSecond), formatRatio(ratio(r.requestsPerSecond, baselineRps)), formatMs(r.latencyMs.p50), formatMs(r.latencyMs.p99), formatMs(r.latencyMs.p99_9), `${errors}${detail}`, formatMiB(m.rssMiB), formatMicros(r.cpu.serverMicrosPerRequest), formatCores(r.cpu.serverCores), formatMicros(r.cpu.loadGeneratorMicrosPerRequest), formatMicros(r.cpu.databaseMicrosPerRequest), formatMicros(r.cpu.otherMicrosPerRequest), formatCores(r.cpu.idleCores)];
}

export function scenarioTable(scenarios: readonly Measured[], baselineRps: number, ratioHeader = "× baseline"): string {
  return markdownTable(
    SCENARIO_HEADERS.map((h) => (h === "× baseline" ? ratioHeader : h)),
    scenarios.map((m) => scenarioRow(m, baselineRps)),
  );
}

/**
 * Issue 16's shares per database: the writes of the POST baseline's req/s (they carry a body), the
 * simple reads of the GET baseline's. The HMAC intake and the spends are held against their floors (FLOORS).
 */
export const REQUEST_TARGETS = { sqlite: { reads: 0.5, writes: 0.4 }, postgres: { reads: 0.35, writes: 0.25 } } as const;
const READ_KEYS: readonly ScenarioKey[] = ["validation-off", "get-effective", "policy-get"];
const WRITE_KEYS: readonly ScenarioKey[] = ["my-set-limit", "suspend"];

const find = (s: Section, key: ScenarioKey): Measured | undefined => s.scenarios.find((m) => m.key === key);
/** Every run of a scenario measured more than once (scenarios 10 and 11). */
const results = (s: Section, key: ScenarioKey): LoadResult[] => s.scenarios.filter((m) => m.key === key).map((m) => m.result);

/** What a scenario's CPU per answer allows on this machine, against a share of a reference's req/s (its floor's). */
export interface Ceiling {
  /** Server, load generator, PostgreSQL and the rest of the machine, µs of CPU per answer. */
  microsPerRequest: number;
  /** Answers a second with every core busy at these costs, and their share of the reference's. */
  requestsPerSecond: number;
  share: number;
  /** The server's CPU per answer the target share allows: with every core in use (the others' costs as measured), and on one core. */
  serverBudgetMicros: { allCores: number; oneCore: number };
}

/**
 * The most `m` could answer on `cpus` cores if none were idle and its CPU per answer stayed as
 * measured, and the server's CPU per answer at which `targetShare` of `referenceRps` fits.
 */
export function ceiling(m: Measured, referenceRps: number, cpus: number, targetShare: number): Ceiling {
  const { serverMicrosPerRequest: server, loadGeneratorMicrosPerRequest: load, databaseMicrosPerRequest: database, otherMicrosPerRequest: other } = m.result.cpu;
  const others = load + database + other;
  const microsPerRequest = server + others;
  const requestsPerSecond = (cpus * 1e6) / microsPerRequest;
  const targetRps = targetShare * referenceRps;
  return {
    microsPerRequest,
    requestsPerSecond,
    share: requestsPerSecond / referenceRps,
    serverBudgetMicros: { allCores: (cpus * 1e6) / targetRps - others, oneCore: 1e6 / targetRps },
  };
}

/** The issue's targets, checked on one database's figures; the spend targets against `postBaselineRps`. */
export function checkTargets(section: Section, baselineRps: number, postBaselineRps = Number.NaN): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const shares = REQUEST_TARGETS[section.dialect];
  const share = (m: Measured, of: "GET" | "POST", at: number) => {
    const r = ratio(m.result.requestsPerSecond, of === "GET" ? baselineRps : postBaselineRps);
    checks.push({ target: `${m.label} ≥ ${formatRatio(at)} the ${of} baseline's req/s`, measured: formatRatio(r), met: r >= at });
  };
  if (section.roundTripsFailed) checks.push({ target: "Round trips counted per operation", measured: "failed", met: false });
  const hmac = find(section, "hmac");
  if (hmac) {
    checks.push({ target: "HMAC intake p99 < 20 ms at that load", measured: `${formatMs(hmac.result.latencyMs.p99)} ms`, met: hmac.result.latencyMs.p99 < 20 });
    checks.push({ target: "HMAC intake: no error", measured: String(totalErrors(hmac.result)), met: totalErrors(hmac.result) === 0 });
  }
  for (const key of READ_KEYS) {
    const m = find(section, key);
    if (m) share(m, "GET", shares.reads);
  }
  for (const key of WRITE_KEYS) {
    const m = find(section, key);
    if (m) share(m, "POST", shares.writes);
  }
  const first = find(section, "list-first");
  const deep = find(section, "list-deep");
  if (first && deep) {
    const slowdown = depthSlowdown(first.result, deep.result);
    checks.push({ target: "deep page no slower than 1.2× the first page", measured: formatRatio(slowdown), met: slowdown <= 1.2 });
  }
  const off = find(section, "validation-off");
  const on = find(section, "validation-on");
  if (off && on) {
    const cost = validationCost(off.result, on.result);
    checks.push({ target: `response validation costs ≤ ${formatPercent(VALIDATION_BUDGET)} of throughput`, measured: formatPercent(cost), met: cost <= VALIDATION_BUDGET });
  }
  const alone = find(section, "rate-limit-alone");
  const flooded = find(section, "rate-limit-flooded");
  if (alone && flooded) {
    const slowdown = floodSlowdown(alone.result, flooded.result);
    checks.push({ target: "a credential's p99 while another floods over its rate limit ≤ 2× its p99 alone", measured: formatRatio(slowdown), met: slowdown <= FLOOD_BUDGET });
    checks.push({ target: "that credential: no answer but 200 while the other floods", measured: String(totalErrors(flooded.result)), met: totalErrors(flooded.result) === 0 });
  }
  for (const { setting, budget, runs } of IN_TURN) {
    for (const run of Object.values(runs)) {
      const cost = settingCost(results(section, run.off), results(section, run.on));
      if (Number.isFinite(cost)) checks.push({ target: `${setting} cost ≤ ${formatPercent(budget)} of ${run.name}'s throughput`, measured: formatPercent(cost), met: cost <= budget });
    }
  }
  if (section.steadyWait) {
    const w = section.steadyWait;
    checks.push({ target: `accepted → execution done p99 < ${EXECUTION_TARGETS.steadyP99Ms} ms at half the maximum intake (${formatRps(w.rate)} events/s)`, measured: `${formatMs(w.p99Ms)} ms`, met: w.p99Ms < EXECUTION_TARGETS.steadyP99Ms });
  }
  if (section.executionWait) {
    const { drainMs } = section.executionWait;
    checks.push({ target: `at saturation (scenario 1), the backlog drains within ${formatDuration(EXECUTION_TARGETS.drainMs)} of the load stopping`, measured: formatDuration(drainMs), met: drainMs <= EXECUTION_TARGETS.drainMs });
  }
  const pruningOff = find(section, "pruning-off");
  const pruningOn = find(section, "pruning-on");
  if (pruningOff && pruningOn) {
    const cost = pruningCost(pruningOff.result, pruningOn.result, section.dialect);
    checks.push({ target: `pruning a backlog of expired executions costs the intake at half its maximum ≤ ${formatPercent(PRUNING_BUDGET)} (CPU per answer${section.dialect === "postgres" ? ", server and database" : ""})`, measured: formatPercent(cost), met: cost <= PRUNING_BUDGET });
    checks.push({ target: "the intake while pruning: no error", measured: String(totalErrors(pruningOn.result)), met: totalErrors(pruningOn.result) === 0 });
  }
  const silent = section.silentNotify;
  if (silent) {
    const { flow } = silent;
    checks.push({ target: `a steady flow's accepted → done p99 < ${DELIVERY_TARGETS.silentFlowP99Ms} ms (${formatRps(flow.rate)} events/s) while ${silent.events} notifications wait on a receiver that never answers`, measured: `${formatMs(flow.p99Ms)} ms`, met: flow.p99Ms < DELIVERY_TARGETS.silentFlowP99Ms && !flow.notDone });
  }
  const fairness = section.backlogFairness;
  for (const { path, rounds } of fairness?.paths ?? []) {
    const worst = Math.max(...rounds.map((r) => r.waitMs));
    checks.push({ target: `a fresh event behind ${fairness!.backlog.toLocaleString("en-US")} pending executions of another automation done within ${formatDuration(DELIVERY_TARGETS.freshEventMs)} (${path}; the worst of ${rounds.length})`, measured: `${formatMs(worst)} ms`, met: worst <= DELIVERY_TARGETS.freshEventMs });
  }
  const parkedOff = find(section, "intake-parked-off");
  const parkedOn = find(section, "intake-parked-on");
  if (parkedOff && parkedOn) {
    const share = ratio(parkedOn.result.requestsPerSecond, parkedOff.result.requestsPerSecond);
    checks.push({ target: `the HMAC intake at half its maximum, each event notifying, with a fifth of the notifications answered 503 (parked and retried) ≥ ${formatPercent(DELIVERY_TARGETS.parkedIntakeShare)} of its req/s without`, measured: formatPercent(share), met: share >= DELIVERY_TARGETS.parkedIntakeShare });
    checks.push({ target: "the intake with notifications parked: no error", measured: String(totalErrors(parkedOn.result)), met: totalErrors(parkedOn.result) === 0 });
  }
  if (section.memory) {
    checks.push({ target: `server RSS after the full bench < 250 MB (${formatMiB(RSS_BUDGET_MIB)} MiB)`, measured: `${formatMiB(section.memory.afterMiB)} MiB (most seen ${formatMiB(section.memory.maxMiB)} MiB)`, met: section.memory.afterMiB < RSS_BUDGET_MIB });
  }
  if (section.soak) {
    const slope = rssSlope(section.soak.samples);
    checks.push({ target: `no RSS growth over the soak (trend of its floor over the second half ≤ ${SOAK_GROWTH_BUDGET} MiB/min)`, measured: formatSlope(slope), met: slope <= SOAK_GROWTH_BUDGET });
  }
  for (const c of floorComparisons(section)) {
    const name = c.operation.label;
    const target = floorTarget(c.operation.key, section.dialect);
    checks.push({ target: `${name} ≥ ${formatRatio(target.throughput)} its floor's req/s`, measured: formatRatio(c.throughput), met: c.throughput >= target.throughput });
    if (target.p99 !== undefined) checks.push({ target: `${name} p99 ≤ ${formatRatio(target.p99)} its floor's`, measured: formatRatio(c.p99), met: c.p99 <= target.p99 });
    checks.push({ target: `${name}: CPU per operation (${section.dialect === "postgres" ? "server and PostgreSQL" : "server, the database in it"}) ≤ ${formatRatio(target.cpu)} its floor's`, measured: formatRatio(c.cpu), met: c.cpu <= target.cpu });
  }
  for (const key of FLOOR_KEYS) {
    const floor = find(section, key);
    if (floor) checks.push({ target: `${floor.label}: no error`, measured: String(totalErrors(floor.result)), met: totalErrors(floor.result) === 0 });
  }
  for (const key of ["spend-authorize-approved", "spend-authorize-declined"] as const) {
    const m = find(section, key);
    if (m) checks.push({ target: `${m.label}: no error`, measured: String(totalErrors(m.result)), met: totalErrors(m.result) === 0 });
  }
  const plain = find(section, "spend-authorize-approved");
  const withTrigger = find(section, "spend-authorize-threshold");
  if (plain && withTrigger) {
    const r = ratio(withTrigger.result.requestsPerSecond, plain.result.requestsPerSecond);
    checks.push({ target: `Authorize (approved) with a usage-threshold trigger ≥ ${FUND_EVENTS_SHARE * 100}% of its req/s without (fund events cost ≤ ${Math.round((1 - FUND_EVENTS_SHARE) * 100)}%)`, measured: formatPercent(r), met: r >= FUND_EVENTS_SHARE });
    checks.push({ target: "Authorize with a usage-threshold trigger: no error", measured: String(totalErrors(withTrigger.result)), met: totalErrors(withTrigger.result) === 0 });
  }
  if (section.fundEventWait) {
    const w = section.fundEventWait;
    checks.push({ target: `a fund event → its execution done p99 < ${FUND_EVENT_P99_MS} ms at half Authorize's maximum (${formatRps(w.rate)} decisions/s)`, measured: `${formatMs(w.p99Ms)} ms`, met: w.p99Ms < FUND_EVENT_P99_MS && !w.notDone });
  }
  if (section.spends) {
    checks.push({ target: "Authorize: 0 overspend (every approved decision and every window within its limit)", measured: String(section.spends.overspent), met: section.spends.overspent === 0 });
    checks.push({ target: "Authorize: no decline while the limit had room", measured: String(section.spends.wronglyDeclined), met: section.spends.wronglyDeclined === 0 });
  }
  return checks;
}

/** Each operation against its floor: req/s, p99 and CPU per operation, the operation's, the floor's, and their ratio. */
export function floorTable(comparisons: readonly FloorComparison[], dialect: Section["dialect"]): string {
  const cpu = (m: Measured) => formatMicros(cpuPerOperation(m.result, dialect));
  return markdownTable(
    ["Operation vs its floor", "req/s", "floor req/s", "× floor", "p99 ms", "floor p99 ms", "× floor p99", `CPU µs/op (${dialect === "postgres" ? "server + PostgreSQL" : "server"})`, "floor CPU µs/op", "× floor CPU"],
    comparisons.map((c) => [
      c.operation.label,
      formatRps(c.operation.result.requestsPerSecond),
      formatRps(c.floor.result.requestsPerSecond),
      formatRatio(c.throughput),
      formatMs(c.operation.result.latencyMs.p99),
      formatMs(c.floor.result.latencyMs.p99),
      formatRatio(c.p99),
      cpu(c.operation),
      cpu(c.floor),
      formatRatio(c.cpu),
    ]),
  );
}

/** --statements: a scenario's costliest statements on PostgreSQL, per answer of its measured run (bench/statements.ts). */
export function statementsTable(m: Measured): string {
  const text = (q: string) => (q.length > 110 ? `${q.slice(0, 107)}...` : q).replaceAll("|", "\\|").replaceAll("`", "'");
  return markdownTable(
    ["Statement", "run by", "calls/answer", "µs/call", "µs/answer"],
    (m.result.statements ?? []).map((st) => [`\`${text(st.query)}\``, st.toplevel ? "the server" : "a function", st.callsPerAnswer.toFixed(2), st.microsPerCall.toFixed(1), st.microsPerAnswer.toFixed(1)]),
  );
}

function sectionMarkdown(section: Section, baseline: Measured, postBaseline: Measured | undefined, cpus: number): string {
  const baselineRps = baseline.result.requestsPerSecond;
  const postRps = postBaseline?.result.requestsPerSecond ?? Number.NaN;
  const title = section.dialect === "sqlite" ? "SQLite" : "PostgreSQL";
  const others = section.scenarios.filter((m) => !SPEND_KEYS.includes(m.key) && !FLOOR_KEYS.includes(m.key));
  const spends = section.scenarios.filter((m) => SPEND_KEYS.includes(m.key));
  const floors = section.scenarios.filter((m) => FLOOR_KEYS.includes(m.key));
  const out = [`## ${title}`, "", `Database: ${section.database}.`, ""];
  if (others.length) out.push(scenarioTable(others, baselineRps), "");
  if (spends.length) out.push(`Spends (issue 15), each against the POST baseline (${formatRps(postRps)} req/s):`, "", scenarioTable(spends, postRps, "× POST baseline"), "");
  if (floors.length) out.push(`The floor servers (issue 33: bench/servers/floor.ts, the least a correct operation does, one ${section.dialect === "postgres" ? "round trip" : "transaction"} each), against the POST baseline:`, "", scenarioTable(floors, postRps, "× POST baseline"), "");
  const comparisons = floorComparisons(section);
  if (comparisons.length) out.push(floorTable(comparisons, section.dialect), "");
  const withStatements = section.scenarios.filter((m) => m.result.statements?.length);
  if (withStatements.length) {
    out.push("PostgreSQL's statements per scenario (`--statements`: pg_stat_statements over the measured run, executor wall time, waits included; a function's time includes its statements'):", "");
    for (const m of withStatements) out.push(`${m.label}:`, "", statementsTable(m), "");
  }
  const facts: string[] = [];
  const w = section.executionWait;
  const notDone = (e: ExecutionWait) => (e.notDone ? ` ${e.notDone.count} execution(s) did not end DONE, e.g. \`${e.notDone.sample.slice(0, 300)}\`.` : "");
  if (w) facts.push(`Accepted → execution done at saturation, under scenario 1's load (automation_executions.completed_at − created_at, ${w.count.toLocaleString("en-US")} executions): p50 ${formatMs(w.p50Ms)} ms, p99 ${formatMs(w.p99Ms)} ms, max ${formatMs(w.maxMs)} ms. The backlog drained ${formatDuration(w.drainMs)} after the load stopped (target: within ${formatDuration(EXECUTION_TARGETS.drainMs)}).${notDone(w)}`);
  const steady = section.steadyWait;
  if (steady) facts.push(`Accepted → execution done at a steady ${formatRps(steady.rate)} events/s, half of scenario 1's intake (scenario 1b, ${steady.count.toLocaleString("en-US")} executions): p50 ${formatMs(steady.p50Ms)} ms, p99 ${formatMs(steady.p99Ms)} ms (target: under ${EXECUTION_TARGETS.steadyP99Ms} ms), max ${formatMs(steady.maxMs)} ms; drained ${formatDuration(steady.drainMs)} after the load stopped.${notDone(steady)}`);
  const fired = section.fundEventWait;
  if (fired) facts.push(`A fund event → its execution done, Authorize at a steady ${formatRps(fired.rate)} decisions/s, half scenario 9's approved rate, each firing an automation on authorized spends (${fired.count.toLocaleString("en-US")} executions; completed_at − created_at, the execution made in the decision's transaction): p50 ${formatMs(fired.p50Ms)} ms, p99 ${formatMs(fired.p99Ms)} ms (target: under ${FUND_EVENT_P99_MS} ms), max ${formatMs(fired.maxMs)} ms; drained ${formatDuration(fired.drainMs)} after the load stopped.${notDone(fired)}`);
  if (section.memory) facts.push(`Server RSS after the full bench: ${formatMiB(section.memory.afterMiB)} MiB (the main server, after its last scenario); the most seen (any server of this database at the end of a scenario, and the soak's samples): ${formatMiB(section.memory.maxMiB)} MiB (target: under 250 MB, ${formatMiB(RSS_BUDGET_MIB)} MiB).`);
  const soak = section.soak;
  if (soak) {
    const first = soak.samples[0];
    const last = soak.samples[soak.samples.length - 1];
    facts.push(`Soak (--soak): HMAC intake at ${formatRps(soak.rate)} events/s for ${formatDuration(soak.seconds * 1000)}, the server's RSS sampled ${soak.samples.length} times: ${formatMiB(first?.rssMiB ?? Number.NaN)} MiB at the start, ${formatMiB(last?.rssMiB ?? Number.NaN)} MiB at the end, most ${formatMiB(Math.max(...soak.samples.map((x) => x.rssMiB)))} MiB; trend of its floor (the lowest sample of each fifth of the second half) ${formatSlope(rssSlope(soak.samples))} (no growth: ≤ ${SOAK_GROWTH_BUDGET} MiB/min).`);
  }
  const hmac = find(section, "hmac");
  if (hmac) {
    const own = hmac.result.cpu.serverMicrosPerRequest;
    const bare = baseline.result.cpu.serverMicrosPerRequest;
    facts.push(`Server CPU per answer, HMAC intake: ${formatMicros(own)} µs, ${formatRatio(own / bare)} the baseline's ${formatMicros(bare)} µs (every thread of the process; the executions still queued when the load stopped are not counted).`);
  }
  const first = find(section, "list-first");
  const deep = find(section, "list-deep");
  if (section.seed) facts.push(`Seeding: ${section.seed.rows.toLocaleString("en-US")} subject-app rows (${section.seed.users.toLocaleString("en-US")} users × ${Math.round(section.seed.rows / section.seed.users)} apps) straight into the database, ${section.seed.method}: ${formatDuration(section.seed.ms)}${section.seed.analyzeMs > 1 ? ` (+ ANALYZE ${formatDuration(section.seed.analyzeMs)})` : ""}.`);
  if (section.walk) facts.push(`Walk to the deep page through the API (Search, page_size 100): ${section.walk.pages.toLocaleString("en-US")} pages in ${formatDuration(section.walk.ms)} (${formatMs(section.walk.ms / Math.max(1, section.walk.pages))} ms a page, one at a time).`);
  if (first && deep) facts.push(`Deep page vs first page: first page req/s ÷ deep page req/s = ${formatRatio(depthSlowdown(first.result, deep.result))} (above 1: the deep page is slower); p50 ${formatMs(deep.result.latencyMs.p50)} vs ${formatMs(first.result.latencyMs.p50)} ms.`);
  const off = find(section, "validation-off");
  const on = find(section, "validation-on");
  if (off && on) {
    const cost = validationCost(off.result, on.result);
    const policy = cost > VALIDATION_BUDGET ? " Above the 10% target: responses are validated only in development and tests (NODE_ENV=production turns it off), and every other scenario runs without it." : "";
    facts.push(`Response validation (VALIDATE_RESPONSES=1 vs 0, ${off.label.replace(/, validation .*$/, "")}): costs ${formatPercent(cost)} of throughput${cost < 0 ? " (negative: within the run's noise)" : ""}.${policy}`);
  }
  for (const { scenario, title, how, runs } of IN_TURN) {
    const costs = Object.values(runs).flatMap((run) => {
      const [off, on] = [results(section, run.off), results(section, run.on)];
      if (off.length === 0 || on.length === 0) return [];
      const cpu = (runs: LoadResult[]) => formatMicros(mean(runs.map((r) => r.cpu.serverMicrosPerRequest)));
      return [`${run.name} costs ${formatPercent(settingCost(off, on))} of its throughput (mean ${formatRps(mean(on.map((r) => r.requestsPerSecond)))} req/s on, ${formatRps(mean(off.map((r) => r.requestsPerSecond)))} off; server CPU per answer ${cpu(on)} µs on, ${cpu(off)} µs off)`];
    });
    if (costs.length) facts.push(`${title} (scenario ${scenario}: ${how}; runs off, on, on, off twice, means compared): ${costs.join("; ")}.`);
  }
  if (section.traceExports) facts.push(`The traced server of scenario 12 exported ${section.traceExports.requests.toLocaleString("en-US")} requests (${formatMiB(section.traceExports.bytes / 1048576)} MiB of protobuf) to the bench's OTLP receiver.`);
  const flood = find(section, "rate-limit-flood");
  const alone = find(section, "rate-limit-alone");
  const flooded = find(section, "rate-limit-flooded");
  if (flood && alone && flooded) {
    const refused = flood.result.statuses["429"] ?? 0;
    facts.push(
      `Rate limits (scenario 8): credential A's flood was answered ${refused.toLocaleString("en-US")} times 429 and ${(flood.result.statuses["200"] ?? 0).toLocaleString("en-US")} times 200 (${formatRps(flood.result.requestsPerSecond)} answers/s, ${formatMicros(flood.result.cpu.serverMicrosPerRequest)} µs of server CPU each). Credential B's p99: ${formatMs(alone.result.latencyMs.p99)} ms alone, ${formatMs(flooded.result.latencyMs.p99)} ms during the flood (${formatRatio(floodSlowdown(alone.result, flooded.result))}).`,
    );
  }
  const sp = section.spends;
  if (sp) {
    const authorize = find(section, "spend-authorize-approved");
    const own = authorize?.result.cpu.serverMicrosPerRequest ?? Number.NaN;
    const bare = postBaseline?.result.cpu.serverMicrosPerRequest ?? Number.NaN;
    facts.push(`Spends in the database after the spend scenarios: ${sp.approved.toLocaleString("en-US")} approved and ${sp.declined.toLocaleString("en-US")} declined decisions, ${sp.captured.toLocaleString("en-US")} captured; ${sp.windows} windows' final usage held against their limits; overspend: ${sp.overspent}; declined with room left: ${sp.wronglyDeclined}${sp.samples.length ? ` (e.g. ${sp.samples.join("; ")})` : ""}.`);
    if (authorize) facts.push(`Server CPU per decision, Authorize (approved): ${formatMicros(own)} µs, ${formatRatio(own / bare)} the POST baseline's ${formatMicros(bare)} µs.`);
    const floor = find(section, FLOORS["spend-authorize-approved"]);
    if (authorize && floor) {
      const target = floorTarget("spend-authorize-approved", section.dialect).throughput;
      const c = ceiling(authorize, floor.result.requestsPerSecond, cpus, target);
      const { serverMicrosPerRequest: server, loadGeneratorMicrosPerRequest: load, databaseMicrosPerRequest: database, otherMicrosPerRequest: other } = authorize.result.cpu;
      facts.push(
        `The machine's ceiling for Authorize (approved): ${formatMicros(c.microsPerRequest)} µs of CPU per decision (server ${formatMicros(server)}, load generator ${formatMicros(load)}, PostgreSQL ${formatMicros(database)}, the rest ${formatMicros(other)}); with all ${cpus} cores busy at these costs, at most ${formatRps(c.requestsPerSecond)} decisions/s, ${formatRatio(c.share)} the floor's measured ${formatRps(floor.result.requestsPerSecond)} (target ${formatRatio(target)}). ${c.serverBudgetMicros.allCores > 0 ? `The target needs the server's CPU per decision at ${formatMicros(c.serverBudgetMicros.allCores)} µs or less with every core in use` : "With every core in use the rest of the machine alone leaves the target no room"}, or ${formatMicros(c.serverBudgetMicros.oneCore)} µs on one core; ${formatCores(authorize.result.cpu.idleCores)} cores were idle.`,
      );
    }
  }
  const pruningOff = find(section, "pruning-off");
  const pruningOn = find(section, "pruning-on");
  const p = section.pruning;
  if (pruningOff && pruningOn && p) {
    const [off, on] = [pruningOff.result, pruningOn.result];
    const postgres = section.dialect === "postgres";
    const cost = pruningCost(off, on, section.dialect);
    const cpu = (r: LoadResult) => (postgres ? `${formatMicros(r.cpu.serverMicrosPerRequest)} + ${formatMicros(r.cpu.databaseMicrosPerRequest)} µs` : `${formatMicros(r.cpu.serverMicrosPerRequest)} µs`);
    facts.push(
      `Pruning (scenario 11): ${p.backlog.toLocaleString("en-US")} finished executions seeded ${p.ageDays} days old, then the intake at half its maximum on a server of its own, ${p.rounds} times each way, in turn (off, on, on, off, …): with nothing due (EXECUTION_RETENTION_DAYS=3650), and with the backlog due (30); each row above takes a way's runs together (latencies: the mean of their percentiles). The runs with the backlog due removed ${p.removed.toLocaleString("en-US")} of them (${formatRps(p.removed / p.seconds)} a second; ${p.left.toLocaleString("en-US")} still due at the end${p.left === 0 ? ": the backlog ran out, so part of a run had no pruning" : ""}). With pruning over without: req/s ${formatRps(on.requestsPerSecond)} vs ${formatRps(off.requestsPerSecond)}, p50 ${formatMs(on.latencyMs.p50)} vs ${formatMs(off.latencyMs.p50)} ms, p99 ${formatMs(on.latencyMs.p99)} vs ${formatMs(off.latencyMs.p99)} ms (${formatRatio(on.latencyMs.p99 / off.latencyMs.p99)}), CPU per answer (${postgres ? "server + PostgreSQL" : "server, the database in it"}) ${cpu(on)} vs ${cpu(off)}: pruning costs ${formatPercent(cost)}${cost < 0 ? " (negative: within the runs' noise)" : ""}.`,
    );
  }
  const silent = section.silentNotify;
  if (silent) {
    const { flow } = silent;
    const states = Object.entries(silent.states).map(([state, n]) => `${n.toLocaleString("en-US")} ${stateName(state)}`).join(", ");
    facts.push(`A receiver that never answers (scenario 14, a server and database of their own, NOTIFY_TIMEOUT_SECONDS and NOTIFY_MAX_IN_FLIGHT_PER_DESTINATION at their defaults): ${silent.events} events queued to an automation whose one step notifies it, then another automation's events at a steady ${formatRps(flow.rate)} a second: that flow's accepted → done (${flow.count.toLocaleString("en-US")} executions) p50 ${formatMs(flow.p50Ms)} ms, p99 ${formatMs(flow.p99Ms)} ms (target: under ${DELIVERY_TARGETS.silentFlowP99Ms} ms), max ${formatMs(flow.maxMs)} ms. The silent automation's executions when the flow ended: ${states || "none"}.${notDone(flow)}`);
  }
  const fairness = section.backlogFairness;
  if (fairness) {
    const paths = fairness.paths.map(({ path, rounds }) => `${path}: ${rounds.map((r) => `${formatMs(r.waitMs)} ms (${r.backlogLeft.toLocaleString("en-US")} left)`).join(", ")}`);
    facts.push(`A fresh event behind a backlog (scenario 15): each round seeds ${fairness.backlog.toLocaleString("en-US")} pending executions of one automation straight into the database, waits until the worker has finished a tenth of them, then sends a fresh event each way; accepted → done of each (completed_at − created_at), with the backlog's executions not yet done when it was: ${paths.join("; ")}.`);
  }
  const parked = section.parkedIntake;
  const parkedOff = find(section, "intake-parked-off");
  const parkedOn = find(section, "intake-parked-on");
  if (parked && parkedOff && parkedOn) {
    const [off, on] = [parkedOff.result, parkedOn.result];
    const cpu = (r: LoadResult) => formatMicros(cpuPerOperation(r, section.dialect));
    facts.push(
      `The intake with notifications parked (scenario 16, a server and database of their own, NOTIFY_RETRY_SCHEDULE=1s,2s,4s, NOTIFY_MAX_IN_FLIGHT_PER_DESTINATION=128): each event's execution notifies a receiver in the bench, which answers 200, or in the runs with parking 503 to every fifth request; the intake at half its maximum so measured first (${formatRps(parked.maximum)} req/s, every answer 200); ${parked.rounds} run${parked.rounds > 1 ? "s" : ""} each way, in turn, each drained before the next. In the runs with parking the receiver answered ${parked.requests.toLocaleString("en-US")} requests, ${parked.unavailable.toLocaleString("en-US")} of them 503, for ${parked.executions.toLocaleString("en-US")} executions (${parked.notDone.toLocaleString("en-US")} not delivered after 4 attempts). With parking over without: req/s ${formatRps(on.requestsPerSecond)} vs ${formatRps(off.requestsPerSecond)}, p99 ${formatMs(on.latencyMs.p99)} vs ${formatMs(off.latencyMs.p99)} ms, CPU per answer (${section.dialect === "postgres" ? "server + PostgreSQL" : "server"}) ${cpu(on)} vs ${cpu(off)} µs: at a fixed rate the req/s say whether the intake kept up, the CPU what parking took from its maximum.`,
    );
  }
  const jwt = section.scenarios.filter((m) => m.result.tokens);
  for (const m of jwt) facts.push(`${m.label}: ${m.result.tokens!.pregenerated.toLocaleString("en-US")} tokens signed before the run, ${m.result.tokens!.signedDuringRun.toLocaleString("en-US")} during it.`);
  if (facts.length) out.push(...facts.map((f) => `- ${f}`), "");
  if (section.roundTrips?.length) {
    out.push(
      `Round trips to ${title} per operation (statements the server sent while answering one request, counted at its pg client; the median of the requests sent, range when they differed; "after the answer": what the request started, e.g. the execution of an accepted event):`,
      "",
      markdownTable(
        ["Operation", "requests", "round trips", "in a transaction", "after the answer"],
        section.roundTrips.map((r) => [r.operation, String(r.requests), `${r.roundTrips}${r.range ? ` (${r.range[0]}–${r.range[1]})` : ""}`, r.transactions ? `${r.inTransaction} (${r.transactions} transaction${r.transactions > 1 ? "s" : ""})` : "none", String(r.after)]),
      ),
      "",
    );
  }
  if (section.roundTripsFailed) out.push(`Round trips to ${title} were not counted: ${section.roundTripsFailed}`, "");
  const checks = checkTargets(section, baselineRps, postRps);
  if (checks.length) out.push(`Targets on ${title}:`, "", markdownTable(["Target", "Measured", "Met"], checks.map((c) => [c.target, c.measured, c.met ? "yes" : "**no**"])), "");
  return out.join("\n");
}

export function renderMarkdown(report: Report): string {
  const { info, baseline } = report;
  const baselineRps = baseline.result.requestsPerSecond;
  return [
    "# Benchmark results",
    "",
    `Written by \`npm run bench${info.quick ? " -- --quick" : ""}\` on ${info.date}. Figures are only comparable within one run: each ratio is to the baseline measured in the same run on the same machine.`,
    "",
    `- Machine: ${info.cpus} CPUs (${info.cpuModel}), ${info.platform}; the load generator runs on the same machine. Load average (1 min) ${info.loadAverage.before.toFixed(2)} before the run, ${info.loadAverage.after.toFixed(2)} at its end.`,
    `- Node ${info.node}; autocannon ${info.autocannon} in its own process on loopback, ${info.connections} connections, ${info.durationSeconds} s per scenario ${info.warmupSeconds > 0 ? `after a ${info.warmupSeconds} s warm-up` : "without warm-up"}; latencies from an HDR histogram in microseconds.`,
    `- Server: \`node dist/src/main.js\` (compiled), ${info.serverEnv}.`,
    `- Databases: ${report.sections.map((s) => s.database).join("; ")}.`,
    `- Errors: answers with another status than the scenario expects (200, or 409 for duplicates), socket errors and timeouts. RSS: VmRSS of the server process at the end of each scenario. CPU: user + system time over the measured run, every thread of the process, per answer; server cores: its CPU seconds a second (of the ${info.cpus} the load generator shares); PostgreSQL: its processes' CPU time per answer; other: the machine's busy time (/proc/stat) less all of those, per answer (the kernel's network work that no process is charged for, mostly); idle cores: the machine's idle time a second.`,
    "",
    "## Baseline",
    "",
    `A bare Express 5 route answering \`{}\`, started like the server (node on compiled JS).${report.postBaseline ? " The POST baseline parses the Authorize scenario's body and headers (a fresh `Idempotency-Key` each) with `express.json()` and answers `{}`: the spend scenarios are held against it." : ""}`,
    "",
    scenarioTable(report.postBaseline ? [baseline, report.postBaseline] : [baseline], baselineRps),
    "",
    ...[baseline, report.postBaseline].flatMap((m) => {
      const warning = m && disturbance(m);
      return warning ? [`- ${warning}`, ""] : [];
    }),
    ...report.sections.map((s) => sectionMarkdown(s, baseline, report.postBaseline, info.cpus)),
  ].join("\n");
}

/** Other processes' cores during a baseline above which the report says the machine was not quiet. */
export const QUIET_CORES = 0.1;

/**
 * A warning when other processes (PostgreSQL, or anything else) took more than QUIET_CORES during
 * baseline `m`: the baseline read low, and every ratio to it reads high.
 */
export function disturbance(m: Measured): string | undefined {
  const { databaseMicrosPerRequest: database, otherMicrosPerRequest: other } = m.result.cpu;
  const cores = ((database + other) * m.result.requestsPerSecond) / 1e6;
  if (!(cores > QUIET_CORES)) return undefined;
  return `During the ${m.key === "baseline-post" ? "POST" : "GET"} baseline, other processes took ${formatCores(cores)} cores (more than ${QUIET_CORES}): the machine was not quiet, the baseline read low, and the ratios to it read high.`;
}

/**
 * Marks the start of the hand-written analysis in RESULTS.md (where the time goes), which a new run
 * keeps as it is: one current analysis, revised when the figures change, not a log of runs.
 */
export const NOTES_MARKER = "<!-- notes: everything below this line is kept when the bench rewrites the file -->";

/** The new results followed by the previous file's hand-written analysis, if it had one. */
export function withKeptNotes(rendered: string, previous: string | undefined): string {
  const at = previous?.indexOf(NOTES_MARKER) ?? -1;
  const notes = at >= 0 ? previous!.slice(at) : `${NOTES_MARKER}\n`;
  return `${rendered.trimEnd()}\n\n${notes.trimEnd()}\n`;
}
