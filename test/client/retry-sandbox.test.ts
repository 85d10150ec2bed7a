// The client's retries against the sandbox, through an HTTP proxy that injects faults: the first
// attempt reaches the server but its answer is lost (the connection dropped), the second is 503 with
// Retry-After, the third goes through. One spend is authorized whatever the retries: the same
// Idempotency-Key is sent each time and the server replays its first answer. A POST without a key
// is never sent twice; a key the client generates makes one user of three attempts.
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request as forward, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createApiClient, paginate, unwrap, type ApiClient, type RetryOptions } from "../../src/client/index.js";
import { freePort } from "../support/process.js";
import { startSandbox, type RunningSandbox } from "../support/sandbox.js";

/** What the proxy does with a faulted request: lose the server's answer, answer 503 itself, or pass it on. */
type Fault = "lose-answer" | "unavailable" | "forward";

/** A proxy in front of the sandbox: requests to `faulted` (METHOD and path) take the faults in order, then go through. */
class FaultProxy {
  readonly seen: { key: string | undefined }[] = [];
  private faults: Fault[] = [];
  private faulted = "";
  private readonly server: Server;

  constructor(private readonly upstream: URL) {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  async listen(): Promise<string> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    const address = this.server.address();
    if (address === null || typeof address === "string") throw new Error("the proxy has no port");
    return `http://127.0.0.1:${address.port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  inject(faulted: string, faults: Fault[]): void {
    this.faulted = faulted;
    this.faults = faults;
    this.seen.length = 0;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const fault = `${req.method} ${req.url}` === this.faulted ? (this.faults.shift() ?? "forward") : "forward";
    if (`${req.method} ${req.url}` === this.faulted) this.seen.push({ key: req.headers["idempotency-key"] as string | undefined });
    if (fault === "unavailable") {
      res.writeHead(503, { "Retry-After": "1", "Content-Type": "application/json" }).end('{"code":14,"message":"the proxy is unavailable"}');
      return;
    }
    const answer = await new Promise<IncomingMessage>((resolve, reject) => {
      const out = forward(new URL(req.url ?? "/", this.upstream), { method: req.method, headers: { ...req.headers, host: this.upstream.host } }, resolve);
      out.on("error", reject);
      out.end(body);
    });
    const answered: Buffer[] = [];
    for await (const chunk of answer) answered.push(chunk as Buffer);
    // The server has done the work and answered; the client never hears it.
    if (fault === "lose-answer") return void req.socket.destroy();
    res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(answered));
  }
}

let dir: string;
let sandbox: RunningSandbox;
let proxy: FaultProxy;
let proxyUrl: string;
let direct: ApiClient;
let waits: number[];
const retry: RetryOptions = { sleep: async (ms) => void waits.push(ms) };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "client-retry-"));
  sandbox = await startSandbox(await freePort(), dir);
  proxy = new FaultProxy(new URL(sandbox.info.baseUrl));
  proxyUrl = await proxy.listen();
  direct = createApiClient({ baseUrl: sandbox.info.baseUrl, credentials: admin() });
}, 120_000);
afterAll(async () => {
  await proxy?.close();
  await sandbox?.stop();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  waits = [];
});

function admin() {
  const user = sandbox.info.users.find((u) => u.role === "ROLE_SUPER_ADMIN")!;
  return { clientId: user.clientId, clientSecret: user.clientSecret };
}

const AUTHORIZE = "POST /api/v1/funds/spend-authorizations";
const CREATE_USER = "POST /api/v1/users";

async function userIdsByEmail(email: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const { user } of paginate(async (page_token) => unwrap(await direct.GET("/api/v1/users", { params: { query: { page_token, page_size: 100 } } })))) {
    if (user.email === email) ids.push(user.id!);
  }
  return ids;
}

describe("the client's retries, against the sandbox behind a faulty proxy", () => {
  it("authorizes one spend through a lost answer and a 503, with the same Idempotency-Key each time", async () => {
    const ada = sandbox.info.users.find((u) => u.role === "ROLE_USER")!;
    const query = { user_id: ada.userId, app_id: "app-salesforce" };
    const before = unwrap(await direct.GET("/api/v1/funds/spend-authorizations", { params: { query } })).list.map((a) => a.authorization.id);

    proxy.inject(AUTHORIZE, ["lose-answer", "unavailable", "forward"]);
    const api = createApiClient({ baseUrl: proxyUrl, credentials: admin(), retry });
    const key = `order-${randomUUID()}`;
    const { data, response } = await api.POST("/api/v1/funds/spend-authorizations", {
      params: { header: { "Idempotency-Key": key } },
      body: { userId: ada.userId, appId: "app-salesforce", amount: { currencyCode: "USD", units: "1", nanos: 0 }, holdSeconds: 600 },
    });

    expect(response.status).toBe(200);
    expect(proxy.seen).toEqual([{ key }, { key }, { key }]);
    // The third attempt was answered with the first one's answer, replayed.
    expect(response.headers.get("Idempotent-Replayed")).toBe("true");
    // Backoff after the lost answer, then the 503's Retry-After: 1.
    expect(waits).toHaveLength(2);
    expect(waits[1]).toBe(1_000);
    const after = unwrap(await direct.GET("/api/v1/funds/spend-authorizations", { params: { query } })).list.map((a) => a.authorization.id);
    expect(after.filter((id) => !before.includes(id))).toEqual([data!.authorization.id]);
    expect(data!.authorization.state).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
  });

  it("sends a POST without an Idempotency-Key once: its 503 is the caller's to handle", async () => {
    proxy.inject(CREATE_USER, ["unavailable", "forward"]);
    const api = createApiClient({ baseUrl: proxyUrl, credentials: admin(), retry });
    const email = `unkeyed-${randomUUID()}@example.com`;
    const { response } = await api.POST("/api/v1/users", { body: { displayName: "Unkeyed", email, roles: ["ROLE_USER"] } });
    expect(response.status).toBe(503);
    expect(proxy.seen).toEqual([{ key: undefined }]);
    expect(waits).toEqual([]);
    expect(await userIdsByEmail(email)).toEqual([]);
  });

  it("generates a key, when asked to, that makes one user of a lost answer, a 503 and a retry", async () => {
    proxy.inject(CREATE_USER, ["lose-answer", "unavailable", "forward"]);
    const api = createApiClient({ baseUrl: proxyUrl, credentials: admin(), retry: { ...retry, generateIdempotencyKeys: true } });
    const email = `keyed-${randomUUID()}@example.com`;
    const { user } = unwrap(await api.POST("/api/v1/users", { body: { displayName: "Keyed", email, roles: ["ROLE_USER"] } }));
    const [first] = proxy.seen;
    expect(first?.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(proxy.seen).toEqual([first, first, first]);
    expect(await userIdsByEmail(email)).toEqual([user.id]);
  });
});
