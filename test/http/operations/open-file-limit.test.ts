// A server process under a low open-file limit (`ulimit -n 256`, as a process manager's LimitNOFILE
// sets it): clients open more connections than its descriptors allow. Each listener takes them up
// to its cap, below the limit, and closes the others at once; each closed one is counted and the
// log says so, rate-limited; meanwhile the connections kept are served (the database still gets
// descriptors), the metrics listener answers, and once the clients close theirs the API takes new
// connections again. Before, libuv accepted and closed them on a descriptor of its own reserve
// without Node hearing of it: no count, no log line, and the process itself out of descriptors.
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiConnectionCap } from "../../../src/http/refused-connections.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { parseMetrics } from "../../support/metrics.js";
import { freePort, running, type Served } from "../../support/process.js";
import { rawRequest } from "../../support/raw-http.js";
import { BOOTSTRAP } from "../../support/server.js";

const LIMIT = 256;
/** More than the limit: some are refused whatever the cap. */
const CLIENTS = 300;
const REFUSED = "tenant_api_http_connections_refused_total";

// Each request below on a connection of its own, closed after its answer (fetch would keep one open, taking a place under the cap).
const scrape = async (port: number) => parseMetrics((await rawRequest(`http://127.0.0.1:${port}`, "GET", "/metrics", {})).text);
const token = async (url: string) => {
  const form = new URLSearchParams({ grant_type: "client_credentials", client_id: BOOTSTRAP.clientId, client_secret: BOOTSTRAP.clientSecret });
  const answer = await rawRequest(url, "POST", "/auth/v1/token", { "Content-Type": "application/x-www-form-urlencoded" }, Buffer.from(form.toString()));
  return (JSON.parse(answer.text) as { access_token: string }).access_token;
};
const served = async (url: string, path: string) => (await rawRequest(url, "GET", path, {}).catch(() => undefined))?.status === 200;

interface Held {
  /** The connections still open after the burst. */
  kept: Socket[];
  /** How many the server closed without a byte. */
  refused: number;
}

/** Opens `count` connections at once and waits until each is open or closed by the server and none changes for half a second. */
async function openMany(port: number, count: number): Promise<Held> {
  const sockets = Array.from({ length: count }, () => connect(port, "127.0.0.1"));
  const closed = new Set<Socket>();
  let changedAt = performance.now();
  for (const s of sockets) {
    s.on("error", () => undefined);
    s.on("connect", () => (changedAt = performance.now()));
    s.on("close", () => (closed.add(s), (changedAt = performance.now())));
  }
  while (performance.now() - changedAt < 500 || sockets.some((s) => s.connecting)) await new Promise((r) => setTimeout(r, 100));
  return { kept: sockets.filter((s) => !closed.has(s)), refused: closed.size };
}

/** One HTTP/1.1 request on an open connection; the answer's status. */
function requestOn(socket: Socket, path: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = "";
    socket.on("data", (d: Buffer) => {
      text += d.toString();
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(text);
      if (status) resolve(Number(status[1]));
    });
    socket.once("close", () => reject(new Error(`closed before an answer: ${text}`)));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  });
}

interface Line {
  msg: string;
  time: string;
  listener?: string;
  refused?: Record<string, number>;
  maxConnections?: number;
  openFileLimit?: number;
}

describe(`a server process under an open-file limit of ${LIMIT}`, () => {
  let cluster: Instances;
  let server: Served;
  let metricsPort: number;
  let apiPort: number;
  const lines = () =>
    server
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.msg === "connections refused: out of file descriptors");

  beforeAll(async () => {
    metricsPort = await freePort();
    cluster = await startInstances(1, BOOTSTRAP, "http://tenant.example.test", { METRICS_PORT: String(metricsPort) }, { shell: `ulimit -n ${LIMIT}` });
    server = cluster.instances[0]!;
    apiPort = Number(new URL(server.url).port);
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it("refuses the API's connections past its cap, counts and logs them (a line at once, then one per 10 s with the count since), serves those it kept, and takes new ones once they close", { timeout: 60_000 }, async () => {
    const bearer = await token(server.url);
    const { kept, refused } = await openMany(apiPort, CLIENTS);
    try {
      expect(refused).toBeGreaterThan(0);
      expect(kept.length).toBeGreaterThan(0);
      // The kept connections are served, the database read included; the metrics listener answers.
      expect(await Promise.all(kept.slice(0, 5).map((s) => requestOn(s, "/api/v1/funds/policy", bearer)))).toEqual([200, 200, 200, 200, 200]);
      const during = await scrape(metricsPort);
      expect(during.value(REFUSED, { listener: "api", reason: "open-file-limit" })).toBe(refused);
      // The cap left room below the limit for everything else the process opened.
      expect(during.value("process_open_fds")).toBeLessThan(LIMIT);
      expect(during.value("process_max_fds")).toBe(LIMIT);

      // The first refusal's line at once, the others' in one line at the end of its 10 s window.
      await until(() => lines().length === 2, "the second line, 10 s after the first", 15_000);
      const [first, second] = lines();
      // The cap: the limit less a reserve of 64 and the database's pool (10 on PostgreSQL); the test's own kept-alive probe may hold one of its places.
      const cap = apiConnectionCap(LIMIT, testDialect() === "postgres" ? 10 : 0);
      expect(kept.length).toBeLessThanOrEqual(cap!);
      expect(first).toMatchObject({ listener: "api", refused: { "open-file-limit": 1 }, maxConnections: cap, openFileLimit: LIMIT });
      expect(second).toMatchObject({ listener: "api", refused: { "open-file-limit": refused - 1 } });
      expect(Date.parse(second!.time) - Date.parse(first!.time)).toBeGreaterThanOrEqual(9_900);
    } finally {
      for (const s of kept) s.destroy();
    }
    // Once they are closed, new connections are taken again.
    await until(() => served(server.url, "/healthz"), "a new connection to be served");
    const again = await openMany(apiPort, 10);
    expect(again.refused).toBe(0);
    for (const s of again.kept) s.destroy();
    expect(running(server.child.pid!)).toBe(true);
  });

  it("the metrics listener keeps its own cap (16 connections): those past it are counted and logged, and scrapes are answered once they close", { timeout: 30_000 }, async () => {
    const before = lines().length;
    const { kept, refused } = await openMany(metricsPort, 40);
    for (const s of kept) s.destroy();
    expect([kept.length, refused]).toEqual([16, 24]);
    // Until the server has seen them closed, a scrape's connection is refused too, and counted.
    let probesRefused = 0;
    await until(async () => (await served(`http://127.0.0.1:${metricsPort}`, "/metrics")) || (probesRefused++, false), "a scrape to be answered");
    const after = await scrape(metricsPort);
    expect(after.value(REFUSED, { listener: "metrics", reason: "open-file-limit" })).toBe(24 + probesRefused);
    expect(lines().slice(before)[0]).toMatchObject({ listener: "metrics", refused: { "open-file-limit": 1 }, maxConnections: 16 });
    expect(running(server.child.pid!)).toBe(true);
  });
});

async function until(ok: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await ok())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
