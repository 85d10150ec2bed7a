// docs/operating.md's configuration table and the variables the server reads cannot drift apart:
// every variable src/ reads from the environment is in the table, and every variable the table
// lists is read by src/ (or, for the few it says so of, by the OpenTelemetry SDK). What src/ reads
// is found two ways: in its text (`env.NAME`, `env["NAME"]`, a reader's method or a helper given
// the name), and by loading the configuration from an environment that records every variable it
// is asked for, under settings that take each branch: a name that reaches the reader through a
// helper's parameter or a variable, which the text does not show, is found there.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadConfig, loadDatabaseConfig, loadKeyCommandConfig, secretsKey } from "../../src/config.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const HEADING = "## Configuration (environment)";

/** Read from the environment, but set by npm, not by whoever runs the server. */
const NOT_CONFIGURATION = new Set(["INIT_CWD"]);
/** Listed, and read by the OpenTelemetry SDK itself (src/tracing/otel.ts hands it the resource's defaults). */
const READ_BY_THE_SDK = new Set(["OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"]);

/** The rows of the configuration table. */
function tableRows(): string[] {
  const doc = readFileSync(join(ROOT, "docs/operating.md"), "utf8");
  const section = doc.split(`\n${HEADING}\n`)[1]?.split(/\n## /)[0];
  if (section === undefined) throw new Error(`docs/operating.md has no "${HEADING}" section`);
  return section.split("\n").filter((line) => line.startsWith("| `"));
}

/** The variables of the table: those named in its first column. */
const listed = (): string[] => tableRows().flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));

/** Every TypeScript source of src/. */
const sources = (): string[] =>
  readdirSync(join(ROOT, "src"), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .map((name) => readFileSync(join(ROOT, "src", name), "utf8"));

/** The variables src/'s text reads: `env.NAME`, `env["NAME"]`, `env.<method>("NAME"` (config.ts's reader), and `(env, "NAME"` (a helper given the environment). */
function readInText(): Set<string> {
  const names = new Set<string>();
  for (const text of sources())
    for (const m of text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)|\benv\["([A-Z][A-Z0-9_]+)"\]|\benv\.[a-z]\w*\(\s*"([A-Z][A-Z0-9_]+)"|\(env, "([A-Z][A-Z0-9_]+)"/g))
      names.add((m[1] ?? m[2] ?? m[3] ?? m[4])!);
  return names;
}

const KEY = Buffer.alloc(32).toString("base64url");
/**
 * Valid settings under which the loaders take each branch that reads more: PostgreSQL, production,
 * metrics, traces by each endpoint and protocol variable, a ratio sampler, a configured bootstrap.
 */
const SETTINGS: Array<Record<string, string>> = [
  {},
  {
    NODE_ENV: "production",
    DATABASE_URL: "postgres://db.example.test/tenant",
    BASE_URL: "https://tenant.example.test",
    SECRETS_KEY: KEY,
    METRICS_PORT: "9464",
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
  },
  { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json", BOOTSTRAP_CLIENT_ID: "admin", BOOTSTRAP_CLIENT_SECRET: "admin-secret-0123456789" },
  { SECRETS_KEY: KEY, RATE_LIMIT: "off", AUDIT_RETENTION_DAYS: "400", EXECUTION_RETENTION_COUNT: "10" },
];

/** The variables the configuration's loaders ask the environment for, under each of SETTINGS. */
function readWhenLoaded(): Set<string> {
  const names = new Set<string>();
  for (const settings of SETTINGS) {
    const env = new Proxy(settings, {
      get: (target, name) => {
        if (typeof name === "string") names.add(name);
        return target[name as string];
      },
      has: (target, name) => {
        if (typeof name === "string") names.add(name);
        return name in target;
      },
    });
    for (const load of [loadConfig, loadDatabaseConfig, loadKeyCommandConfig, secretsKey]) load(env);
  }
  return names;
}

describe("docs/operating.md's configuration table", () => {
  it("finds what it judges: variables in the text, and those whose name reaches the reader in a variable", () => {
    expect(listed().length).toBeGreaterThan(40);
    expect(readInText().size).toBeGreaterThan(40);
    // `env.oneOf(protocolVariable, ...)`: the text names no variable there.
    expect(readInText().has("OTEL_EXPORTER_OTLP_PROTOCOL")).toBe(false);
    expect(readWhenLoaded().has("OTEL_EXPORTER_OTLP_PROTOCOL")).toBe(true);
  });

  it("names every variable the server reads", () => {
    const table = tableRows().join("\n");
    const read = [...readInText(), ...readWhenLoaded()].filter((name) => !NOT_CONFIGURATION.has(name));
    expect([...new Set(read)].filter((name) => !new RegExp(`\\b${name}\\b`).test(table))).toEqual([]);
  });

  it("lists only variables the server (or, as it says, the OpenTelemetry SDK) reads", () => {
    const read = new Set([...readInText(), ...readWhenLoaded()]);
    expect(listed().filter((name) => !read.has(name) && !READ_BY_THE_SDK.has(name))).toEqual([]);
  });

  it("NODE_ENV is read in one place, config.ts's reader, which every check of it goes through", () => {
    const text = sources().join("\n");
    expect(text.match(/\benv\.NODE_ENV\b|\benv\[\s*["'`]NODE_ENV/g)).toBeNull();
    expect(text.match(/\.value\("NODE_ENV"\)/g)).toHaveLength(1);
  });
});
