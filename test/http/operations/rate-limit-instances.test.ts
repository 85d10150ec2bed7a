// The rate limit of a credential across two server processes on one database, as behind a load
// balancer: each admits its share (the quota over the instances it counts live), so together they
// admit no more than the quota once each has counted the other, and none asks the database per
// request. When one stops, the other takes the whole quota at its next heartbeat.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage, type Storage } from "../../../src/storage/connect.js";
import { HEARTBEAT_MS } from "../../../src/storage/live-instances.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";

const ADMIN = { clientId: "limits-admin", clientSecret: "limits-admin-secret-0123456789" };
// A long window: what refills while the test runs (one request every 15 s) stays small and is counted.
const QUOTA = 40;
const WINDOW_SECONDS = 600;

let cluster: Instances | undefined;
let storage: Storage;

beforeAll(async () => {
  cluster = await startInstances(2, ADMIN, "http://tenant.example.test", { RATE_LIMIT_CREDENTIAL: `${QUOTA}/${WINDOW_SECONDS}` });
  storage = await openStorage(loadConfig({ DATABASE_URL: cluster.database.url }).database);
}, 120_000);
afterAll(async () => {
  await storage?.close();
  await cluster?.stop();
});

/** Waits until `count` instances are registered and each refreshed (so counted the others) after the last one started or `since`. */
async function counted(count: number, since = 0): Promise<void> {
  for (let deadline = Date.now() + 4 * HEARTBEAT_MS; Date.now() < deadline; ) {
    const rows = await storage.db.selectFrom("instance_heartbeats").select(["started_at", "last_seen"]).execute();
    const lastStart = Math.max(since, ...rows.map((r) => Date.parse(r.started_at)));
    if (rows.length === count && rows.every((r) => Date.parse(r.last_seen) > lastStart + 1000)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the instances did not count ${count} within ${4 * HEARTBEAT_MS} ms`);
}

/** A fresh credential's access token, through the first instance. */
async function freshToken(): Promise<string> {
  const admin = cluster!.clients[0]!;
  const { user } = unwrap(await admin.POST("/api/v1/users", { body: { displayName: "Limited", email: `limited-${Date.now()}@example.com`, roles: ["ROLE_USER"] } }));
  const { credential, clientSecret } = unwrap(await admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.id! } }, body: {} }));
  const r = await fetch(`${cluster!.instances[0]!.url}/auth/v1/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: credential.clientId!, client_secret: clientSecret }),
  });
  return ((await r.json()) as { access_token: string }).access_token;
}

/** Sends `n` requests with `token`, round robin over `urls`; answers how many each admitted, and the seconds it took. */
async function flood(urls: string[], token: string, n: number): Promise<{ admitted: number[]; seconds: number }> {
  const admitted = urls.map(() => 0);
  const started = performance.now();
  for (let i = 0; i < n; i += 10) {
    const statuses = await Promise.all(
      Array.from({ length: 10 }, (_, j) => fetch(`${urls[(i + j) % urls.length]}/api/v1/funds/policy`, { headers: { Authorization: `Bearer ${token}` } }).then((r) => r.status)),
    );
    statuses.forEach((status, j) => {
      expect([200, 429]).toContain(status);
      if (status === 200) admitted[(i + j) % urls.length]!++;
    });
  }
  return { admitted, seconds: (performance.now() - started) / 1000 };
}

/** What a credential's quota refills in `seconds`, over every instance together (rounded up). */
const refilled = (seconds: number) => Math.ceil((seconds * QUOTA) / WINDOW_SECONDS);

describe(`a credential's rate limit across two instances on one ${testDialect()} database`, () => {
  it("once each counts the other, each admits half of the quota, and both together no more than the quota", async () => {
    await counted(2);
    const token = await freshToken();
    const { admitted, seconds } = await flood(cluster!.instances.map((s) => s.url), token, 3 * QUOTA);
    const [first, second] = admitted as [number, number];
    expect(first + second).toBeGreaterThanOrEqual(QUOTA);
    expect(first + second).toBeLessThanOrEqual(QUOTA + refilled(seconds));
    for (const each of [first, second]) expect(each).toBeLessThanOrEqual(QUOTA / 2 + refilled(seconds));
  }, 60_000);

  it("when one instance stops, the other admits the whole quota from its next heartbeat", async () => {
    const stopped = Date.now();
    await cluster!.instances[1]!.stop();
    await counted(1, stopped);
    const token = await freshToken();
    const { admitted, seconds } = await flood([cluster!.instances[0]!.url], token, 2 * QUOTA);
    expect(admitted[0]).toBeGreaterThanOrEqual(QUOTA);
    expect(admitted[0]).toBeLessThanOrEqual(QUOTA + refilled(seconds));
  }, 60_000);
});
