// `npm run bench:profile -- <file.cpuprofile> --rate <req/s> [--from <s> --to <s>] [--top <n>]`: where
// a server's main thread spent its time per request during a measured run of `npm run bench
// --profile`. A profile covers the process's whole life (start-up, the seeding, idle seconds), so
// shares of the whole mislead; this takes the samples of one stretch (by default the longest run of
// seconds the thread was at least half busy: the warm-up and the measured run, at one rate) and
// divides them by the requests answered in it (`--rate` × its length, the rate from the report).
// Time is the sampler's wall time on the thread: a `writev` sample includes the time the thread
// waited for a core after its write woke PostgreSQL (bench/RESULTS.md, "Spend decisions").
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Summary {
  from: number;
  to: number;
  requests: number;
  /** The thread's busy time (not idle) per request, µs. */
  busy: number;
  /** µs per request by where the code comes from, the costliest first. */
  byOrigin: [string, number][];
  /** µs per request by function (self time), the costliest first. */
  byFunction: [string, number][];
}

const IDLE = "(idle)";

/** Where a frame's code comes from: a package, Node's own modules, a folder of ours, or the VM. */
export function originOf(frame: ProfileNode["callFrame"]): string {
  const { url, functionName } = frame;
  if (!url) return functionName === "writev" || functionName.startsWith("(garbage") ? functionName : "(native)";
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inPackage) return inPackage[1]!;
  if (url.startsWith("node:")) return "(node)";
  return url.replace(/^.*\/dist\//, "").replace(/\/[^/]+$/, "/");
}

/** Seconds since the profile's start at which each sample was taken, with its node and duration. */
function timedSamples(profile: CpuProfile): { second: number; node: number; micros: number }[] {
  let at = profile.startTime;
  return profile.samples.map((node, i) => {
    const micros = profile.timeDeltas[i] ?? 0;
    at += micros;
    return { second: (at - profile.startTime) / 1e6, node, micros };
  });
}

/** The longest run of whole seconds in which the thread was busy at least half the time. */
export function busiestStretch(profile: CpuProfile): { from: number; to: number } {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === IDLE).map((n) => n.id));
  const busyPerSecond: number[] = [];
  for (const s of timedSamples(profile)) {
    const second = Math.floor(s.second);
    busyPerSecond[second] = (busyPerSecond[second] ?? 0) + (idle.has(s.node) ? 0 : s.micros);
  }
  let best = { from: 0, to: 0 };
  let start: number | undefined;
  for (let second = 0; second <= busyPerSecond.length; second++) {
    const busy = (busyPerSecond[second] ?? 0) >= 500_000;
    if (busy && start === undefined) start = second;
    if (!busy && start !== undefined) {
      if (second - start > best.to - best.from) best = { from: start, to: second };
      start = undefined;
    }
  }
  return best;
}

/** The samples between `from` and `to` seconds, per request at `rate` requests a second. */
export function summarize(profile: CpuProfile, window: { from: number; to: number }, rate: number): Summary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const requests = rate * (window.to - window.from);
  const origins = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  for (const s of timedSamples(profile)) {
    if (s.second < window.from || s.second >= window.to) continue;
    const frame = byId.get(s.node)?.callFrame;
    if (!frame || frame.functionName === IDLE) continue;
    busy += s.micros;
    const origin = originOf(frame);
    origins.set(origin, (origins.get(origin) ?? 0) + s.micros);
    const name = `${frame.functionName || "(anonymous)"} ${frame.url.replace(/^.*\//, "")}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + s.micros);
  }
  const perRequest = (m: Map<string, number>) => [...m].map(([k, v]): [string, number] => [k, v / requests]).sort((a, b) => b[1] - a[1]);
  return { ...window, requests, busy: busy / requests, byOrigin: perRequest(origins), byFunction: perRequest(functions) };
}

export function renderSummary(summary: Summary, top: number): string {
  const row = ([name, micros]: [string, number]) => `| ${name} | ${micros.toFixed(1)} |`;
  return [
    `Seconds ${summary.from} to ${summary.to} of the profile, ${Math.round(summary.requests)} requests: the main thread busy ${summary.busy.toFixed(0)} µs a request.`,
    "",
    "| From | µs per request |",
    "|---|---:|",
    ...summary.byOrigin.slice(0, top).map(row),
    "",
    "| Function (self) | µs per request |",
    "|---|---:|",
    ...summary.byFunction.slice(0, top).map(row),
  ].join("\n");
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { rate: { type: "string" }, from: { type: "string" }, to: { type: "string" }, top: { type: "string", default: "25" } },
  });
  const [file] = positionals;
  const rate = Number(values.rate);
  if (!file || !(rate > 0)) {
    process.stderr.write("usage: npm run bench:profile -- <file.cpuprofile> --rate <req/s> [--from <s> --to <s>] [--top <n>]\n");
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const window = values.from !== undefined && values.to !== undefined ? { from: Number(values.from), to: Number(values.to) } : busiestStretch(profile);
  process.stdout.write(`${renderSummary(summarize(profile, window, rate), Number(values.top))}\n`);
}
