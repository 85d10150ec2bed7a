// Idempotency-Key across instances: three server processes on one database (as behind a load
// balancer) share the records, so a retry reaching another instance is replayed, its sealed secret
// opened there, and requests with one key spread over the instances have one effect.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";

const ADMIN = { clientId: "idem-admin", clientSecret: "idem-admin-secret-0123456789" };

let cluster: Instances | undefined;
let clients: ApiClient[] = [];

beforeAll(async () => {
  cluster = await startInstances(3, ADMIN, "http://tenant.example.test");
  ({ clients } = cluster);
}, 120_000);

afterAll(async () => cluster?.stop());

const client = (i: number) => clients[i % clients.length]!;
const keyed = (key: string) => ({ header: { "Idempotency-Key": key } });

describe(`Idempotency-Key across three instances on one ${testDialect()} database`, () => {
  it("20 requests with one key spread over the instances create one user; the others are replayed or in use", async () => {
    const key = randomUUID();
    const email = `${key}@example.com`;
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client(i).POST("/api/v1/users", { params: keyed(key), body: { displayName: "Racer", email, roles: ["ROLE_USER"] } })),
    );
    const ran = answers.filter((a) => a.response.status === 200 && !a.response.headers.has("idempotent-replayed"));
    expect(ran).toHaveLength(1);
    for (const a of answers) {
      if (a.response.status === 200) expect(a.data).toEqual(ran[0]!.data);
      else expect([a.response.status, (a.error as { details: { reason?: string }[] }).details[0]?.reason]).toEqual([409, "IDEMPOTENCY_KEY_IN_USE"]);
    }
    const users = unwrap(await client(1).GET("/api/v1/users", { params: { query: { page_size: 100 } } }));
    expect(users.list.filter((u) => u.user.email === email)).toHaveLength(1);
  });

  it("a retry reaching another instance replays the credential, its secret opened there", async () => {
    const { user } = unwrap(await client(0).POST("/api/v1/users", { body: { displayName: "Subject", email: `${randomUUID()}@example.com`, roles: ["ROLE_USER"] } }));
    const key = randomUUID();
    const create = (i: number) => client(i).POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.id! }, ...keyed(key) }, body: { displayName: "ci" } });
    const first = unwrap(await create(0));
    for (const i of [1, 2]) {
      const again = await create(i);
      expect(again.response.headers.get("idempotent-replayed")).toBe("true");
      expect(unwrap(again)).toEqual(first);
    }
    const listed = unwrap(await client(2).GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.id! } } }));
    expect(listed.list).toHaveLength(1);
  });
});
