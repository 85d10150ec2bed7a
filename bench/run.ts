// `npm run bench`: builds the server, measures the baselines and every scenario (issue 6's, and the
// spends of issue 15) on SQLite and PostgreSQL, prints the tables and writes them to bench/RESULTS.md.
//
//   npm run bench -- [--db sqlite|postgres|both] [--quick] [--duration <s>] [--warmup <s>]
//                    [--connections <n>] [--rows <n>] [--deep-page <n>] [--log-level <level>]
//                    [--profile] [--only <key,key>] [--skip-build | --rebuild] [--out <file>]
//                    [--soak <s>] [--soak-rate <n>] [--skip-round-trips] [--backlog <n>] [--statements]
//                    [--help]
//
// Builds what is out of date first (the server with `npm run build`, the baseline with
// bench/tsconfig.build.json). --quick: a smoke run (20,000 rows, 1 s scenarios without warm-up,
// under a minute once built); its results (and those of --only) go to
// bench/RESULTS.quick.md unless --out says otherwise. --profile: the servers write V8 CPU profiles
// (--cpu-prof) to bench/profiles/. --only: measure these scenarios alone (keys in bench/report.ts;
// `pruning` names both of scenario 11's, `floor` the floor servers' four; an operation held against
// a floor brings its floor; `delivery` names scenarios 14 to 16, `intake-with-parked` both runs of
// 16). --backlog: the expired executions scenario 11 seeds (300,000; 20,000 with --quick).
// --soak: after the scenarios, HMAC intake for this many seconds at half scenario 1's rate (or
// --soak-rate events a second), the server's RSS sampled meanwhile (off unless given). On
// PostgreSQL the round trips of each operation measured are counted, on a server of their own
// (--skip-round-trips: not). --statements (PostgreSQL): each scenario's costliest statements from
// pg_stat_statements, which PostgreSQL must preload (docs/benchmarks.md).
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { POSTGRES_ADMIN_URL, type Dialect } from "./database.js";
import { build, freePort, killAll, ROOT, startDriver, startJwksServer, startNode } from "./processes.js";
import { renderMarkdown, SCENARIO_GROUPS, withKeptNotes, type Measured, type Report, type ScenarioKey, type Section } from "./report.js";
import { runDatabase, type BenchSettings, type JwtKey } from "./scenarios.js";
import { spendPostBaseline } from "./spends.js";
import { checkStatements } from "./statements.js";

function options() {
  const { values } = parseArgs({
    options: {
      db: { type: "string", default: "both" },
      quick: { type: "boolean", default: false },
      duration: { type: "string" },
      warmup: { type: "string" },
      connections: { type: "string", default: "20" },
      rows: { type: "string" },
      "deep-page": { type: "string" },
      "log-level": { type: "string", default: "warn" },
      profile: { type: "boolean", default: false },
      "skip-build": { type: "boolean", default: false },
      rebuild: { type: "boolean", default: false },
      out: { type: "string" },
      only: { type: "string" },
      soak: { type: "string" },
      "soak-rate": { type: "string" },
      "skip-round-trips": { type: "boolean", default: false },
      statements: { type: "boolean", default: false },
      backlog: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    // The usage is this file's opening comment.
    const head = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
    process.stdout.write(`${head.slice(0, head.findIndex((l) => !l.startsWith("//"))).map((l) => l.replace(/^\/\/ ?/, "")).join("\n")}\n`);
    process.exit(0);
  }
  const number = (name: string, raw: string | undefined, fallback: number) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${raw}`);
    return n;
  };
  if (values["soak-rate"] !== undefined && values.soak === undefined) throw new Error("--soak-rate needs --soak <seconds>");
  if (!["sqlite", "postgres", "both"].includes(values.db)) throw new Error(`--db must be sqlite, postgres or both`);
  const quick = values.quick;
  const rows = number("rows", values.rows, quick ? 20_000 : 1_000_000);
  const appsPerUser = 100;
  const seedUsers = Math.max(1, Math.round(rows / appsPerUser));
  return {
    dbs: (values.db === "both" ? ["sqlite", "postgres"] : [values.db]) as Dialect[],
    quick,
    connections: number("connections", values.connections, 20),
    durationSeconds: Math.max(1, Math.round(number("duration", values.duration, quick ? 1 : 10))),
    // autocannon ends runs on whole seconds: a warm-up shorter than 1 s still takes one. Quick has none.
    warmupSeconds: values.warmup === "0" || (quick && values.warmup === undefined) ? 0 : Math.max(1, Math.round(number("warmup", values.warmup, 2))),
    seedUsers,
    appsPerUser,
    // Page 10,000 at page_size 100 over one million rows; over fewer rows, the page as deep.
    deepPage: Math.floor(number("deep-page", values["deep-page"], Math.min(10_000, (seedUsers * appsPerUser) / 100))),
    logLevel: values["log-level"],
    profile: values.profile,
    skipBuild: values["skip-build"],
    rebuild: values.rebuild,
    out: values.out ?? join(ROOT, quick || values.only ? "bench/RESULTS.quick.md" : "bench/RESULTS.md"),
    ...(values.soak !== undefined ? { soak: { seconds: Math.round(number("soak", values.soak, 0)), ...(values["soak-rate"] !== undefined ? { rate: number("soak-rate", values["soak-rate"], 0) } : {}) } } : {}),
    roundTrips: !values["skip-round-trips"],
    statements: values.statements,
    only: values.only ? new Set(values.only.split(",").flatMap((k) => SCENARIO_GROUPS[k.trim()] ?? [k.trim() as ScenarioKey])) : undefined,
    pruningBacklog: Math.round(number("backlog", values.backlog, quick ? 20_000 : 300_000)),
    // The steady flow of scenario 14 outlasts an attempt's timeout (15 s by default) but in a quick run.
    delivery: quick ? { flowSeconds: 5, backlog: 2_000, backlogRounds: 2, parkedRounds: 1 } : { flowSeconds: 30, backlog: 10_000, backlogRounds: 5, parkedRounds: 2 },
  };
}

function jwtKey(alg: "ES256" | "EdDSA", kid: string, jwksBase: string, name: string): { key: JwtKey; publicJwk: Record<string, unknown> } {
  const pair = alg === "ES256" ? generateKeyPairSync("ec", { namedCurve: "P-256" }) : generateKeyPairSync("ed25519");
  return {
    key: { alg, kid, privateJwk: pair.privateKey.export({ format: "jwk" }), jwksUrl: `${jwksBase}/${name}.json` },
    publicJwk: { ...pair.publicKey.export({ format: "jwk" }), kid, alg, use: "sig" },
  };
}

async function main(): Promise<void> {
  const opts = options();
  const loadBefore = loadavg()[0] ?? Number.NaN;
  const started = performance.now();
  const log = (line: string) => process.stdout.write(`[bench ${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);
  if (!opts.skipBuild) {
    const built = build(opts.rebuild);
    log(built.length ? `built: ${built.join(", ")}` : "compiled JS is up to date (--rebuild to build anyway)");
  }
  if (opts.statements && opts.dbs.includes("postgres")) await checkStatements(POSTGRES_ADMIN_URL);
  const workDir = mkdtempSync(join(tmpdir(), "tenant-bench-"));
  const profileDir = opts.profile ? join(ROOT, "bench/profiles") : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });

  // The JWKS the JWT listeners fetch (once, then cached by the server).
  const documents: Record<string, { keys: unknown[] }> = { es256: { keys: [] }, eddsa: { keys: [] } };
  const jwks = await startJwksServer(documents);
  const es256 = jwtKey("ES256", "bench-es256", jwks.url, "es256");
  const eddsa = jwtKey("EdDSA", "bench-eddsa", jwks.url, "eddsa");
  documents.es256!.keys.push(es256.publicJwk);
  documents.eddsa!.keys.push(eddsa.publicJwk);

  const driver = startDriver();
  try {
    const settings: BenchSettings = {
      connections: opts.connections,
      durationSeconds: opts.durationSeconds,
      warmupSeconds: opts.warmupSeconds,
      seedUsers: opts.seedUsers,
      appsPerUser: opts.appsPerUser,
      deepPage: opts.deepPage,
      logLevel: opts.logLevel,
      workDir,
      ...(profileDir ? { profileDir } : {}),
      ...(opts.only ? { only: opts.only } : {}),
      ...(opts.soak ? { soak: opts.soak } : {}),
      roundTrips: opts.roundTrips,
      statements: opts.statements,
      pruningBacklog: opts.pruningBacklog,
      delivery: opts.delivery,
    };

    // The baseline, started the same way as the server.
    const port = await freePort();
    const bare = await startNode({ script: join(ROOT, "dist/bench/servers/baseline.js"), env: { HOST: "127.0.0.1", NODE_ENV: "production" }, port, probePath: "/", logFile: join(workDir, "baseline.log") });
    let baseline: Measured;
    let postBaseline: Measured;
    try {
      const spec = { origin: bare.url, connections: opts.connections, durationSeconds: opts.durationSeconds, warmupSeconds: opts.warmupSeconds, expectStatus: 200, serverPid: bare.pid };
      const result = await driver.run(spec, { kind: "fixed", method: "GET", path: "/", headers: {} });
      baseline = { key: "baseline", label: "Baseline: Express 5, GET / → {}", result, rssMiB: bare.rssMiB() };
      log(`baseline: ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.latencyMs.p50.toFixed(2)} ms, p99 ${result.latencyMs.p99.toFixed(2)} ms`);
      const post = await driver.run(spec, spendPostBaseline());
      postBaseline = { key: "baseline-post", label: "POST baseline: Express 5, express.json(), POST / → {}", result: post, rssMiB: bare.rssMiB() };
      log(`POST baseline: ${Math.round(post.requestsPerSecond)} req/s, p50 ${post.latencyMs.p50.toFixed(2)} ms, p99 ${post.latencyMs.p99.toFixed(2)} ms`);
    } finally {
      await bare.stop();
    }

    const sections: Section[] = [];
    for (const dialect of opts.dbs) sections.push(await runDatabase(dialect, settings, driver, { es256: es256.key, eddsa: eddsa.key }, log));

    const cpuList = cpus();
    const report: Report = {
      info: {
        date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
        cpus: cpuList.length,
        cpuModel: cpuList[0]?.model.trim() ?? "unknown",
        node: process.version,
        platform: `${platform()} ${release()}`,
        autocannon: (JSON.parse(readFileSync(join(ROOT, "node_modules/autocannon/package.json"), "utf8")) as { version: string }).version,
        connections: opts.connections,
        durationSeconds: opts.durationSeconds,
        warmupSeconds: opts.warmupSeconds,
        quick: opts.quick,
        loadAverage: { before: loadBefore, after: loadavg()[0] ?? Number.NaN },
        serverEnv: `NODE_ENV=production, LOG_LEVEL=${opts.logLevel}, VALIDATE_RESPONSES=0 except where stated, RATE_LIMIT=off except in scenario 8, EXECUTION_RETENTION_DAYS=3650 except in scenario 10, JWKS_ALLOW_INSECURE=1 (the JWKS is served by the bench on 127.0.0.1), NOTIFICATION_ALLOW_INSECURE=1 in scenarios 14 and 16 (their receiver likewise)`,
      },
      baseline,
      postBaseline,
      sections,
    };
    const markdown = renderMarkdown(report);
    process.stdout.write(`\n${markdown}\n`);
    writeFileSync(opts.out, withKeptNotes(markdown, existsSync(opts.out) ? readFileSync(opts.out, "utf8") : undefined));
    log(`wrote ${opts.out} (${Math.round((performance.now() - started) / 1000)} s in all)`);
  } finally {
    await driver.stop();
    await jwks.close();
    rmSync(workDir, { recursive: true, force: true });
  }
}

process.on("SIGINT", () => {
  killAll();
  process.exit(130);
});

main().catch((e: unknown) => {
  process.stderr.write(`[bench] failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  killAll();
  process.exit(1);
});
