// The rooms of src/ depend one way (issue 16): webhooks/ owns listeners, their secrets and their
// checks and imports nothing of automations/; automations/ uses webhooks/ only through
// webhooks/for-automations.ts, the intake's hand-off included. Domain code does not import Express,
// neither directly nor through src/http. Only src/metrics imports prom-client, and no room but the
// composition root (src/server.ts) imports src/metrics: the others report through interfaces of
// their own. OpenTelemetry is imported by src/tracing/otel.ts (and the export worker's modules it
// loads) alone, which src/tracing/start.ts imports when traces are on: off, none of it is loaded. Read from the import statements of every
// module of src/.
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
const show = (found: Edge[]) => found.map((e) => `${e.from} -> ${e.to}`);

describe("dependencies between the rooms of src/", () => {
  it("reads the imports it judges (the rules below are not met by finding none)", () => {
    expect(show(edges.filter((e) => e.from === "src/webhooks/intake.ts"))).toContain("src/webhooks/intake.ts -> src/webhooks/listeners.ts");
    expect(show(edges.filter((e) => inRoom(e.from, "automations") && e.to === WEBHOOKS_INTERFACE))).toContain(`src/automations/event-hand-off.ts -> ${WEBHOOKS_INTERFACE}`);
    expect(edges.some((e) => inRoom(e.from, "http") && e.to === "express")).toBe(true);
    expect(edges.some((e) => inRoom(e.from, "metrics") && e.to === "prom-client")).toBe(true);
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
