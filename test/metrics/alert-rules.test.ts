// The alerting rules operators copy (examples/prometheus/alerts.yml), checked by Prometheus's own
// tool (Debian's `prometheus` package ships promtool; .ci/run installs it): the file is valid, and
// its unit tests (alerts.test.yml: synthetic series) fire each rule where it should and not short
// of it. docs/operating.md names each rule. Skipped, saying so, where promtool is missing;
// test/http/operations/alerts-prometheus.test.ts fires the rules against a real Prometheus.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runToEnd } from "../support/process.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const RULES = join(ROOT, "examples/prometheus/alerts.yml");
const PROMTOOL = process.env.PROMTOOL_BIN || "/usr/bin/promtool";
const found = existsSync(PROMTOOL);
if (!found) console.warn(`SKIPPED: promtool's checks of examples/prometheus/alerts.yml: no promtool at ${PROMTOOL} (apt-get install prometheus, or set PROMTOOL_BIN)`);

/** The alerts the rule file defines, in its order. */
const alerts = () => [...readFileSync(RULES, "utf8").matchAll(/^\s+- alert: (\S+)$/gm)].map((m) => m[1]!);

describe("examples/prometheus/alerts.yml", () => {
  it.skipIf(!found)("passes `promtool check rules`", async () => {
    const run = await runToEnd(PROMTOOL, ["check", "rules", RULES]);
    expect(run.code, run.out).toBe(0);
    expect(run.out).toContain(`SUCCESS: ${alerts().length} rules found`);
  });

  it.skipIf(!found)("passes its unit tests, `promtool test rules alerts.test.yml`, which test every rule", async () => {
    const run = await runToEnd(PROMTOOL, ["test", "rules", "alerts.test.yml"], {}, { cwd: join(ROOT, "examples/prometheus") });
    expect(run.code, run.out).toBe(0);
    expect(run.out).toContain("SUCCESS");
    const tested = new Set([...readFileSync(join(ROOT, "examples/prometheus/alerts.test.yml"), "utf8").matchAll(/alertname: (\S+)/g)].map((m) => m[1]!));
    expect(alerts().filter((name) => !tested.has(name))).toEqual([]);
  });

  it("is linked from docs/operating.md, which names each of its alerts", () => {
    const doc = readFileSync(join(ROOT, "docs/operating.md"), "utf8");
    expect(doc).toContain("(../examples/prometheus/alerts.yml)");
    expect(alerts().length).toBeGreaterThan(10);
    expect(alerts().filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
  });
});
