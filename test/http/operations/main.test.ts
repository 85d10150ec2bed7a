// `npm start`'s entry point as a real process: configuration errors; stdout, a JSON log line each;
// the first start's bootstrap, whose generated credential goes to a file of its own (mode 0600,
// created once, never over another file) and never to the log stream; the database kept across
// restarts; and a graceful SIGTERM that lets an in-flight request finish. On the test database
// (SQLite, or PostgreSQL in that leg).
import { execFileSync, spawnSync } from "node:child_process";
import { request } from "node:http";
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../support/database.js";
import { freePort, serve } from "../../support/process.js";
import { serveRelease, startToEnd } from "../../support/release.js";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const tsx = join(root, "node_modules/.bin/tsx");
const dir = mkdtempSync(join(tmpdir(), "tenant-main-"));
const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
  rmSync(dir, { recursive: true, force: true });
});
// Vitest exports Vite's BASE_URL ("/"); the server must not inherit it.
const CLEAN = { BASE_URL: "" };
const KEY = Buffer.alloc(32, 6).toString("base64url");
/** No balancer in front: stopped without a drain. */
const NO_DRAIN = { SHUTDOWN_DRAIN_SECONDS: "0" };

// Node itself with tsx's loader, not the tsx command: that one is a parent process relaying signals
// to the server, and under load a SIGTERM it relayed could end the server by default (exit 143)
// before the server's own handler saw it, hanging up on the request in flight (3 of 16 runs).
async function start(env: Record<string, string>) {
  const port = await freePort();
  return serve({ command: process.execPath, args: ["--import", "tsx", join(root, "src/main.ts")], url: `http://127.0.0.1:${port}`, probePath: "/healthz", env: { ...CLEAN, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env } });
}

/** A new database of the test's dialect, and a folder of its own to start a server in. */
async function fresh(): Promise<{ url: string; cwd: string }> {
  const cwd = mkdtempSync(join(dir, "cwd-"));
  const database = await createTestDatabase(cwd);
  databases.push(database);
  return { url: database.url, cwd };
}

/** Every line of a server's stdout, each of which must be a JSON log line. */
function logLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`a line of stdout is not JSON: ${line}`);
      }
    });
}

/** The credential a bootstrap credential file holds, as a shell reads it. */
function credentialIn(file: string): { clientId: string; clientSecret: string } {
  const read = execFileSync("sh", ["-c", '. "$1" && printf "%s\\n%s" "$CLIENT_ID" "$CLIENT_SECRET"', "sh", file], { encoding: "utf8" }).split("\n");
  expect(read[0]).toMatch(/^c1_[A-Za-z0-9]{18}$/);
  expect(read[1]).toMatch(/^[A-Za-z0-9_-]{43}$/);
  return { clientId: read[0]!, clientSecret: read[1]! };
}

async function tokenStatus(url: string, credential: { clientId: string; clientSecret: string }): Promise<number> {
  const body = new URLSearchParams({ grant_type: "client_credentials", client_id: credential.clientId, client_secret: credential.clientSecret });
  return (await fetch(`${url}/auth/v1/token`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body })).status;
}

/** The README's quickstart block (after `npm start`), for the server at `url`. */
function readmeQuickstart(url: string): string {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const block = /`npm start` logs a JSON line[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  if (block === undefined) throw new Error("README.md has no quickstart block after `npm start` logs a JSON line");
  return block.replaceAll("http://localhost:8080", url);
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

  it("on a new database writes the generated credential to ./data/bootstrap-credential.env (0600), never to stdout, where each line is JSON; the README's quickstart works with it; a restart leaves the file", async () => {
    const { url, cwd } = await fresh();
    const file = join(cwd, "data/bootstrap-credential.env");
    const first = await serveRelease({ ...NO_DRAIN, DATABASE_URL: url, LOG_LEVEL: "info" }, undefined, cwd);
    const credential = credentialIn(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(await tokenStatus(first.url, credential)).toBe(200);
    const quickstart = spawnSync("bash", ["-euo", "pipefail", "-c", readmeQuickstart(first.url)], { cwd, encoding: "utf8" });
    expect(quickstart.status, quickstart.stderr).toBe(0);
    expect(JSON.parse(quickstart.stdout)).toMatchObject({ fundPolicy: { currencyCode: "USD" } });
    await first.stop();

    const lines = logLines(first.stdout());
    const port = new URL(first.url).port;
    expect(lines).toContainEqual(expect.objectContaining({ msg: "listening", listening: `127.0.0.1:${port}`, url: first.url, docs: `${first.url}/docs`, contract: `${first.url}/openapi.yaml` }));
    expect(lines).toContainEqual(expect.objectContaining({ level: 40, msg: expect.stringMatching(/^bootstrap super-admin created: /), clientId: credential.clientId, file }));
    expect(lines).toContainEqual(expect.objectContaining({ msg: "shut down" }));
    expect(first.output()).not.toContain(credential.clientSecret);

    const written = { text: readFileSync(file, "utf8"), mtimeMs: statSync(file).mtimeMs };
    const second = await serveRelease({ ...NO_DRAIN, DATABASE_URL: url, LOG_LEVEL: "info" }, undefined, cwd);
    expect(await tokenStatus(second.url, credential)).toBe(200);
    await second.stop();
    expect({ text: readFileSync(file, "utf8"), mtimeMs: statSync(file).mtimeMs }).toEqual(written);
    expect(logLines(second.stdout()).filter((line) => String(line.msg).startsWith("bootstrap"))).toEqual([]);
  });

  it("under NODE_ENV=production likewise, at BOOTSTRAP_CREDENTIAL_FILE; listening on 0.0.0.0, the log says so", async () => {
    const { url, cwd } = await fresh();
    const file = join(cwd, "credentials/admin.env");
    const port = await freePort();
    const env = { ...NO_DRAIN, NODE_ENV: "production", DATABASE_URL: url, BASE_URL: `http://127.0.0.1:${port}`, SECRETS_KEY: KEY, BOOTSTRAP_CREDENTIAL_FILE: file, HOST: "0.0.0.0", PORT: String(port), LOG_LEVEL: "info" };
    const served = await serveRelease(env, undefined, cwd);
    const credential = credentialIn(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(await tokenStatus(served.url, credential)).toBe(200);
    await served.stop();
    const lines = logLines(served.stdout());
    const everyAddress = Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).filter((entry) => entry.family === "IPv4").map((entry) => `http://${entry.address}:${port}`));
    expect(lines).toContainEqual(expect.objectContaining({ msg: "listening", listening: `0.0.0.0:${port}`, url: `http://127.0.0.1:${port}`, urls: everyAddress }));
    expect(lines).toContainEqual(expect.objectContaining({ msg: expect.stringMatching(/^bootstrap super-admin created: /), clientId: credential.clientId, file }));
    expect(served.output()).not.toContain(credential.clientSecret);
    expect(served.output()).not.toContain(KEY);
  });

  it("never writes over an existing file: the start is refused (exit 2) with no super-admin made, and the next start, the file moved away, makes it", async () => {
    const { url, cwd } = await fresh();
    const file = join(cwd, "credential.env");
    writeFileSync(file, "# another database's\n");
    const refused = await startToEnd({ DATABASE_URL: url, BOOTSTRAP_CREDENTIAL_FILE: file, LOG_LEVEL: "info" }, undefined, cwd);
    expect(refused.code, refused.out).toBe(2);
    expect(refused.stderr).toContain(`refusing to start: BOOTSTRAP_CREDENTIAL_FILE ${file} exists already, and a generated credential is never written over a file`);
    expect(readFileSync(file, "utf8")).toBe("# another database's\n");
    logLines(refused.stdout);

    renameSync(file, `${file}.kept`);
    const served = await serveRelease({ ...NO_DRAIN, DATABASE_URL: url, BOOTSTRAP_CREDENTIAL_FILE: file }, undefined, cwd);
    expect(await tokenStatus(served.url, credentialIn(file))).toBe(200);
    await served.stop();
  });

  it("a file that cannot be created refuses the start (exit 2) with no super-admin made; the next start, with a path it can create, makes it", async () => {
    const { url, cwd } = await fresh();
    const notAFolder = join(cwd, "not-a-folder");
    writeFileSync(notAFolder, "");
    const refused = await startToEnd({ DATABASE_URL: url, BOOTSTRAP_CREDENTIAL_FILE: join(notAFolder, "credential.env"), LOG_LEVEL: "info" }, undefined, cwd);
    expect(refused.code, refused.out).toBe(2);
    expect(refused.stderr).toMatch(/^refusing to start: the bootstrap credential cannot be written to .*not-a-folder\/credential\.env \(BOOTSTRAP_CREDENTIAL_FILE\): (ENOTDIR|EEXIST): /m);
    logLines(refused.stdout);

    const file = join(cwd, "credential.env");
    const served = await serveRelease({ ...NO_DRAIN, DATABASE_URL: url, BOOTSTRAP_CREDENTIAL_FILE: file }, undefined, cwd);
    expect(await tokenStatus(served.url, credentialIn(file))).toBe(200);
    await served.stop();
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
