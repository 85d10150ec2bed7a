// A real Prometheus (Debian's `prometheus` package; .ci/run installs it), run by a test with a
// configuration and data folder of its own on a free port, never as a service: it scrapes the given
// targets every second as job `tenant-api` and evaluates the given rule files every second.
// PromQL and the alerts are read over its HTTP API.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { freePort } from "./process.js";

export const PROMETHEUS = process.env.PROMETHEUS_BIN || "/usr/bin/prometheus";
export const prometheusFound = existsSync(PROMETHEUS);

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Alert {
  labels: Record<string, string>;
  state: "pending" | "firing";
  activeAt: string;
  value: string;
}

export interface Prometheus {
  query(promql: string): Promise<Sample[]>;
  /** The alerts pending or firing now. */
  alerts(): Promise<Alert[]>;
  /** Waits for `ok`, failing with what Prometheus logged. */
  until(ok: () => Promise<boolean>, what: string, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** `targets`: host:port of each metrics listener; `ruleFiles`: absolute paths. */
export async function startPrometheus(targets: string[], ruleFiles: string[] = []): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), "tenant-prometheus-"));
  const config = [
    "global:",
    "  scrape_interval: 1s",
    "  scrape_timeout: 900ms",
    "  evaluation_interval: 1s",
    ...(ruleFiles.length > 0 ? ["rule_files:", ...ruleFiles.map((f) => `  - ${JSON.stringify(f)}`)] : []),
    "scrape_configs:",
    "  - job_name: tenant-api",
    "    static_configs:",
    `      - targets: ${JSON.stringify(targets)}`,
  ];
  writeFileSync(join(dir, "prometheus.yml"), config.join("\n") + "\n");
  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;
  let log = "";
  const child: ChildProcess = spawn(PROMETHEUS, [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (log += d.toString()));

  const get = async <T>(path: string): Promise<T> => {
    const body = (await (await fetch(`${api}${path}`)).json()) as { status: string; error?: string; data: T };
    expect(body.status, `${path}: ${body.error}`).toBe("success");
    return body.data;
  };
  const until = async (ok: () => Promise<boolean>, what: string, timeoutMs = 30_000) => {
    const deadline = performance.now() + timeoutMs;
    while (!(await ok())) {
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}; Prometheus said: ${log.slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(async () => (await fetch(`${api}/-/ready`).catch(() => undefined))?.status === 200, "Prometheus to be ready");
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    query: async (promql) => (await get<{ result: Sample[] }>(`/api/v1/query?${new URLSearchParams({ query: promql })}`)).result,
    alerts: async () => (await get<{ alerts: Alert[] }>("/api/v1/alerts")).alerts,
    until,
    stop,
  };
}
