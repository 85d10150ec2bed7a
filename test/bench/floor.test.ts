// The bench's floor server (issue 33) is exact: the least a correct decision does must still be
// correct, or the targets held against it mean nothing. The race the server passes
// (test/http/spends/concurrency.test.ts): 150 concurrent authorizations of 1.00 against a limit of
// 100.00 approve exactly 100, and the window's usage row holds their sum; replays of one key, and
// concurrent captures of one hold or deliveries of one event, take effect once. On SQLite, and on
// PostgreSQL with TEST_DATABASE=postgres.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { floorApp } from "../../bench/servers/floor-app.js";
import { openFloorStore } from "../../bench/servers/floor-open.js";
import type { FloorStore } from "../../bench/servers/floor-store.js";
import { hmacSignature } from "../../src/client/webhook-sender.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../support/database.js";

const N = 150;
const NANOS = 1_000_000_000n;
const USER = "floor-user";
const LISTENER = "/api/v1/webhooks/incoming/floor-listener";
const SECRET = "floor-secret-0123456789";

let dir: string;
let database: TestDatabase;
let store: FloorStore;
let server: Server;
let origin: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "floor-test-"));
  database = await createTestDatabase(dir);
  store = await openFloorStore(database.url);
  await store.seed({
    currencyCode: "USD",
    limits: ["race", "replay", "capture"].map((appId) => ({ userId: USER, appId, limitNanos: 100n * NANOS })),
    listeners: [{ path: LISTENER, listenerId: "floor-listener", secret: SECRET }],
  });
  server = createServer(floorApp(store));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await store?.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const authorize = async (appId: string, key = randomUUID(), units = "1") => {
  const r = await fetch(`${origin}/api/v1/funds/spend-authorizations`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Idempotency-Key": key },
    body: JSON.stringify({ userId: USER, appId, amount: { currencyCode: "USD", units, nanos: 0 } }),
  });
  return { status: r.status, body: (await r.json()) as { id: string; approved: boolean } };
};

describe(`the floor server (${testDialect()})`, () => {
  it(`${N} concurrent authorizations of 1.00 against 100.00: exactly 100 approved, the usage row their sum`, async () => {
    const answers = await Promise.all(Array.from({ length: N }, () => authorize("race")));
    expect(answers.map((a) => a.status)).toEqual(Array(N).fill(200));
    expect(answers.filter((a) => a.body.approved)).toHaveLength(100);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(N);
    expect(await store.window(USER, "race")).toEqual({ spentNanos: 0n, heldNanos: 100n * NANOS, approved: 100, declined: 50, approvedNanos: 100n * NANOS });
  }, 60_000);

  it("one Idempotency-Key sent 20 times at once decides once; the same key with another amount is refused", async () => {
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 20 }, () => authorize("replay", key)));
    expect(new Set(answers.map((a) => JSON.stringify(a)))).toEqual(new Set([JSON.stringify(answers[0])]));
    expect(answers[0]?.body.approved).toBe(true);
    expect((await authorize("replay", key, "2")).status).toBe(422);
    expect(await store.window(USER, "replay")).toMatchObject({ heldNanos: NANOS, approved: 1, declined: 0 });
  });

  it("a hold captured 10 times at once is captured once: held moves to spent", async () => {
    const { body } = await authorize("capture", randomUUID(), "7");
    const statuses = await Promise.all(Array.from({ length: 10 }, async () => (await fetch(`${origin}/api/v1/funds/spend-authorizations/${body.id}/capture`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })).status));
    expect(statuses.sort()).toEqual([200, ...Array(9).fill(400)]);
    expect(await store.window(USER, "capture")).toMatchObject({ spentNanos: 7n * NANOS, heldNanos: 0n, approved: 1 });
  });

  it("an event delivered 10 times at once is accepted once; a bad signature is refused", async () => {
    const eventId = randomUUID();
    const payload = JSON.stringify({ n: 1 });
    const deliver = (signature: string) => {
      const timestamp = String(Math.floor(Date.now() / 1000));
      return fetch(origin + LISTENER, { method: "POST", headers: { "Content-Type": "application/json", "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId, "Webhook-Signature": signature || hmacSignature(SECRET, timestamp, eventId, payload) }, body: payload }).then((r) => r.status);
    };
    expect(await deliver("AAAA")).toBe(401);
    const statuses = await Promise.all(Array.from({ length: 10 }, () => deliver("")));
    expect(statuses.sort()).toEqual([200, ...Array(9).fill(409)]);
  });
});
