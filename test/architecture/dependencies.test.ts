// The rules of src/ that docs/architecture.md states, read from the code: the floors rooms stand on
// (an import runs down, never up or sideways), no circle of imports, no file name used twice, where
// SQL lives (src/storage/ keeps shared mechanisms; a table's queries sit in the room that owns it),
// and the narrower rules between rooms (webhooks and automations, Express, prom-client, OpenTelemetry).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");
const DOMAIN = ["funds", "webhooks", "automations", "identity"];
const WEBHOOKS_INTERFACE = "src/webhooks/for-automations.ts";
/** The modules that may import OpenTelemetry: its Tracer, and the exporter's worker (its entry, its messages' types, its main-thread side). */
const OTEL_MODULES = ["src/tracing/otel.ts", "src/tracing/worker-exporter.ts", "src/tracing/export-worker.ts", "src/tracing/export-messages.ts"];

interface Edge {
  /** The importing module, relative to the repository: `src/webhooks/intake.ts`. */
  from: string;
  /** The imported module likewise (`.js` read as `.ts`), or a package's specifier as written. */
  to: string;
}

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return modules(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Every import, re-export and dynamic import of src/ (comments and strings are not read as imports). */
const edges: Edge[] = modules(SRC).flatMap((file) =>
  ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.map(({ fileName: specifier }) => ({
    from: relative(ROOT, file),
    to: specifier.startsWith(".") ? relative(ROOT, resolve(dirname(file), specifier)).replace(/\.js$/, ".ts") : specifier,
  })),
);

const inRoom = (path: string, room: string) => path.startsWith(`src/${room}/`);
/** The room of a module of src/: its folder under src/, or its file name when it stands in src/ itself. */
const roomOf = (path: string): string | undefined => (path.startsWith("src/") ? path.slice("src/".length).split("/")[0] : undefined);

/**
 * The floors of src/, from the ground up. A room imports only rooms on floors below its own; rooms
 * that share a floor do not import each other. The typed client (client/) stands apart: it is
 * published alone and imports nothing of src/ but itself.
 */
const FLOORS: readonly (readonly string[])[] = [
  ["core"],
  ["config.ts"],
  ["storage", "tracing"],
  ["audit", "webhooks"],
  ["identity", "sandbox"],
  ["funds"],
  ["automations"],
  ["http"],
  ["metrics"],
  ["sealed-secrets.ts"],
  ["server.ts", "commands"],
  ["main.ts"],
];
const floorOf = (room: string) => FLOORS.findIndex((rooms) => rooms.includes(room));

/**
 * Who owns each table: its queries live in that room. src/storage/ owns the tables of the shared
 * mechanisms (settings, kept answers, instance heartbeats, change versions).
 */
const TABLE_OWNERS: Readonly<Record<string, string>> = {
  users: "identity",
  credentials: "identity",
  signing_keys: "identity",
  token_failures: "identity",
  fund_policy: "funds",
  subject_app_limits: "funds",
  app_caps: "funds",
  spend_authorizations: "funds",
  spend_ledger: "funds",
  spend_usage: "funds",
  automations: "automations",
  automation_executions: "automations",
  notification_secrets: "automations",
  notification_signing_keys: "automations",
  fund_threshold_firings: "automations",
  notification_destinations: "automations",
  webhook_listeners: "webhooks",
  webhook_secrets: "webhooks",
  webhook_events: "webhooks",
  audit_events: "audit",
  audit_inbox: "audit",
  settings: "storage",
  idempotency_records: "storage",
  instance_heartbeats: "storage",
  change_versions: "storage",
};
/** The modules of src/storage/ that name every table by design: the schema's types and the migrations. */
const SCHEMA_MODULES = (path: string) => path === "src/storage/schema.ts" || path.startsWith("src/storage/migrations");

const KYSELY_TABLE_METHODS = new Set(["selectFrom", "insertInto", "replaceInto", "updateTable", "deleteFrom", "mergeInto", "innerJoin", "leftJoin", "table"]);

/**
 * The tables a module queries: the table arguments of Kysely's builders, and the tables of SQL
 * text (after FROM, INTO, UPDATE, JOIN, TABLE or ON in a string or template literal). Comments and
 * other strings (a change kind spelled like a table) are not read.
 */
function tablesNamed(path: string): string[] {
  const found = new Set<string>();
  const sqlTable = /\b(?:from|into|update|join|table|on)\s+"?([a-z_]+)\b/gi;
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && KYSELY_TABLE_METHODS.has(node.expression.name.text)) {
      const first = node.arguments[0];
      if (first && ts.isStringLiteral(first)) found.add(first.text.split(" ")[0]!);
    }
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      for (const m of node.text.matchAll(sqlTable)) found.add(m[1]!);
    }
    node.forEachChild(visit);
  };
  visit(ts.createSourceFile(path, readFileSync(join(ROOT, path), "utf8"), ts.ScriptTarget.Latest, true));
  return [...found].filter((name) => name in TABLE_OWNERS);
}

/** The circles of imports among the modules of src/ (Tarjan's strongly connected components of two or more). */
function circles(): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) if (e.to.startsWith("src/")) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) component.push(w);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) connect(v);
  return found;
}
const show = (found: Edge[]) => found.map((e) => `${e.from} -> ${e.to}`);

describe("dependencies between the rooms of src/", () => {
  it("reads the imports it judges (the rules below are not met by finding none)", () => {
    expect(show(edges.filter((e) => e.from === "src/webhooks/intake.ts"))).toContain("src/webhooks/intake.ts -> src/webhooks/listeners.ts");
    expect(show(edges.filter((e) => inRoom(e.from, "automations") && e.to === WEBHOOKS_INTERFACE))).toContain(`src/automations/event-hand-off.ts -> ${WEBHOOKS_INTERFACE}`);
    expect(edges.some((e) => inRoom(e.from, "http") && e.to === "express")).toBe(true);
    expect(edges.some((e) => inRoom(e.from, "metrics") && e.to === "prom-client")).toBe(true);
  });

  it("every room stands on a floor, and every import runs down to a lower floor (or stays in its room)", () => {
    const rooms = [...new Set(modules(SRC).map((file) => roomOf(relative(ROOT, file))!))];
    expect(rooms.filter((room) => room !== "client" && floorOf(room) < 0)).toEqual([]);
    const up = edges.filter((e) => {
      const [from, to] = [roomOf(e.from)!, roomOf(e.to)];
      if (to === undefined || from === to) return false;
      return from === "client" || to === "client" ? true : floorOf(to) >= floorOf(from);
    });
    expect(show(up)).toEqual([]);
  });

  it("no modules of src/ import each other in a circle, type-only imports included", () => {
    expect(circles()).toEqual([]);
  });

  it("no file name is used twice in src/", () => {
    const byName = new Map<string, string[]>();
    for (const file of modules(SRC)) byName.set(file.split("/").pop()!, [...(byName.get(file.split("/").pop()!) ?? []), relative(ROOT, file)]);
    expect([...byName.values()].filter((paths) => paths.length > 1)).toEqual([]);
  });

  it("no test file is over 800 lines: past that it is split by operation or outcome", () => {
    const long = modules(join(ROOT, "test"))
      .map((file) => ({ path: relative(ROOT, file), lines: readFileSync(file, "utf8").split("\n").length }))
      .filter(({ lines }) => lines > 800);
    expect(long).toEqual([]);
  });

  it("every table of the schema has an owning room", () => {
    const schema = readFileSync(join(SRC, "storage/schema.ts"), "utf8");
    const database = /export interface Database \{([^}]*)\}/.exec(schema)?.[1] ?? "";
    const tables = [...database.matchAll(/^\s+([a-z_]+): [A-Za-z]+Table;/gm)].map((m) => m[1]);
    expect(tables.length).toBeGreaterThan(20);
    expect(tables.filter((table) => table !== undefined && !(table in TABLE_OWNERS))).toEqual([]);
  });

  it("src/storage/ holds no query of a table a domain owns: that SQL sits in the owning room", () => {
    // The detector finds what it must: the claims' SQL and Kysely builders name the executions' table.
    expect(tablesNamed("src/automations/execution-claims.ts")).toContain("automation_executions");
    expect(tablesNamed("src/identity/users.ts")).toContain("users");
    const misplaced = modules(join(SRC, "storage"))
      .map((file) => relative(ROOT, file))
      .filter((path) => !SCHEMA_MODULES(path))
      .flatMap((path) => tablesNamed(path).filter((table) => TABLE_OWNERS[table] !== "storage").map((table) => `${path} names ${table} (owned by ${TABLE_OWNERS[table]}/)`));
    expect(misplaced).toEqual([]);
  });

  it("webhooks/ imports nothing of automations/", () => {
    expect(show(edges.filter((e) => inRoom(e.from, "webhooks") && inRoom(e.to, "automations")))).toEqual([]);
  });

  it(`automations/ imports webhooks/ only through ${WEBHOOKS_INTERFACE}`, () => {
    expect(show(edges.filter((e) => inRoom(e.from, "automations") && inRoom(e.to, "webhooks") && e.to !== WEBHOOKS_INTERFACE))).toEqual([]);
  });

  it("only src/metrics imports prom-client, and only the composition root imports src/metrics", () => {
    expect(show(edges.filter((e) => e.to.startsWith("prom-client") && !inRoom(e.from, "metrics")))).toEqual([]);
    expect(show(edges.filter((e) => inRoom(e.to, "metrics") && !inRoom(e.from, "metrics") && e.from !== "src/server.ts"))).toEqual([]);
  });

  it("domain code does not import Express, directly or through src/http", () => {
    const express = (to: string) => /^express($|[/-])/.test(to) || inRoom(to, "http");
    expect(show(edges.filter((e) => DOMAIN.some((room) => inRoom(e.from, room)) && express(e.to)))).toEqual([]);
  });

  it("OpenTelemetry is imported by src/tracing/otel.ts and the export worker's modules alone, and otel.ts only on demand (a dynamic import)", () => {
    expect(show(edges.filter((e) => e.to.startsWith("@opentelemetry/") && !OTEL_MODULES.includes(e.from)))).toEqual([]);
    expect(show(edges.filter((e) => e.to === "src/tracing/otel.ts"))).toEqual(["src/tracing/start.ts -> src/tracing/otel.ts"]);
    // The worker's exporter is made by otel.ts alone; the worker's entry is loaded by no import (a Worker runs it).
    expect(show(edges.filter((e) => e.to === "src/tracing/worker-exporter.ts"))).toEqual(["src/tracing/otel.ts -> src/tracing/worker-exporter.ts"]);
    expect(show(edges.filter((e) => e.to === "src/tracing/export-worker.ts"))).toEqual([]);
    const start = readFileSync(join(SRC, "tracing/start.ts"), "utf8");
    expect(start).toMatch(/await import\("\.\/otel\.js"\)/);
    expect(start).not.toMatch(/from "\.\/otel\.js"/);
  });
});
