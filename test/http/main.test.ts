// `npm start`'s entry point as a real process: configuration errors, first-start bootstrap, the
// database kept across restarts, and a graceful SIGTERM that lets an in-flight request finish.
import { spawnSync } from "node:child_process";
import { request } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, serve } from "../support/process.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tsx = join(root, "node_modules/.bin/tsx");
const dir = mkdtempSync(join(tmpdir(), "tenant-main-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// Vitest exports Vite's BASE_URL ("/") into the environment; the server must not inherit it.
const CLEAN = { BASE_URL: "" };

// Node itself with tsx's loader, not the tsx command: that one is a parent process relaying signals
// to the server, and under load a SIGTERM it relayed could end the server by default (exit 143)
// before the server's own handler saw it, hanging up on the request in flight (3 of 16 runs).
async function start(env: Record<string, string>) {
  const port = await freePort();
  return serve({ command: process.execPath, args: ["--import", "tsx", join(root, "src/main.ts")], url: `http://127.0.0.1:${port}`, probePath: "/healthz", env: { ...CLEAN, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env } });
}

// Each start compiles the server with tsx: under the full suite's load a start takes tens of seconds.
describe("the server process", { timeout: 120_000 }, () => {
  it("refuses a bad configuration with a message naming the variable, and exit code 2", { timeout: 120_000 }, () => {
    for (const [name, value] of [["PORT", "eighty"], ["FUND_CURRENCY", "dollars"], ["DATABASE_URL", "mysql://x"], ["LOG_LEVEL", "loud"], ["BASE_URL", "not a url"], ["HEAP_GROWTH_PERCENT", "1000"], ["SHUTDOWN_TIMEOUT_SECONDS", "0"], ["SHUTDOWN_DRAIN_SECONDS", "25"], ["EXECUTION_LEASE_SECONDS", "9"], ["SIGNING_KEY_ROTATION_DAYS", "3651"], ["EXECUTION_RETENTION_DAYS", "6"], ["EXECUTION_RETENTION_COUNT", "0"], ["EXECUTION_RETENTION_SWEEP_SECONDS", "0"], ["AUDIT_RETENTION_DAYS", "29"], ["AUDIT_RETENTION_DAYS", "forever"], ["METRICS_PORT", "nine"], ["METRICS_PORT", "8080"]] as const) {
      const r = spawnSync(tsx, [join(root, "src/main.ts")], { env: { ...process.env, ...CLEAN, [name]: value }, encoding: "utf8" });
      expect(r.status, name).toBe(2);
      expect(r.stderr, name).toContain(name);
    }
    const pair = spawnSync(tsx, [join(root, "src/main.ts")], { env: { ...process.env, ...CLEAN, BOOTSTRAP_CLIENT_ID: "only-the-id" }, encoding: "utf8" });
    expect(pair.status).toBe(2);
  });

  it("creates the database on first start and prints generated bootstrap credentials once; they work", async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, "first.sqlite")}` };
    const first = await start(env);
    const out = first.output();
    expect(out).toContain(`${first.url}/docs`);
    const clientId = /client_id:\s+(\S+)/.exec(out)?.[1];
    const clientSecret = /client_secret:\s+(\S+)/.exec(out)?.[1];
    expect(clientId && clientSecret).toBeTruthy();
    const token = await fetch(`${first.url}/auth/v1/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId!, client_secret: clientSecret! }),
    });
    expect(token.status).toBe(200);
    await first.stop();
    const second = await start(env);
    expect(second.output()).not.toContain("client_secret");
    await second.stop();
  });

  it("on SIGTERM lets an in-flight request finish, then exits 0", async () => {
    const s = await start({ DATABASE_URL: `sqlite:${join(dir, "term.sqlite")}`, BOOTSTRAP_CLIENT_ID: "admin-client", BOOTSTRAP_CLIENT_SECRET: "admin-secret-0123456789" });
    // A request whose body is still arriving when the signal lands is in flight for certain. The
    // server's 100 Continue says it has read the headers: the request is in flight (a connection
    // still waiting for its headers would count as idle and be closed). Timing alone could not
    // tell, on a busy machine.
    const body = new URLSearchParams({ grant_type: "client_credentials", client_id: "admin-client", client_secret: "admin-secret-0123456789" }).toString();
    const answer = new Promise<number>((resolve, reject) => {
      const headers = { "Content-Type": "application/x-www-form-urlencoded", "Content-Length": Buffer.byteLength(body), Expect: "100-continue" };
      const req = request(`${s.url}/auth/v1/token`, { method: "POST", headers }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      req.on("continue", () => {
        s.child.kill("SIGTERM");
        setTimeout(() => req.end(body), 300);
      });
      req.flushHeaders();
    });
    const exited = new Promise<number | null>((resolve) => s.child.once("exit", (code) => resolve(code)));
    expect(await answer).toBe(200);
    expect(await exited).toBe(0);
  });
});
