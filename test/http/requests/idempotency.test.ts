// Idempotent retries through HTTP (the Idempotency-Key header) on UserService.Create,
// CredentialService.Create, CreateAutomation, RotateWebhookSecret, RotateNotificationSecret and a destination's Enable and Disable: a retry answers the first
// answer again, secrets included, and does nothing more; a different request with the key is
// refused; keys belong to the calling user; 20 requests at once with one key have one effect; an
// answer is kept 24 hours, sealed at rest; a malformed key is 400; without the key nothing changes.
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { openStorage, type Storage } from "../../../src/storage/connect.js";
import { IdempotencyRecords } from "../../../src/storage/idempotency-records.js";
import { createTestDatabase, type TestDatabase } from "../../support/database.js";
import { failedDestination } from "../../support/destinations.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { expectError, reasonOf } from "../limits/helpers.js";
import { appWithLimit, funds, money, spends } from "../spends/helpers.js";
import { createHooked, expectAccepted, sendHmac } from "../webhooks/helpers.js";

const HOUR = 3_600_000;

let dir: string;
let database: TestDatabase;
let ts: TestServer;
/** The server's database, opened by the test too: to see what is stored. */
let storage: Storage;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-idempotency-"));
  database = await createTestDatabase(dir);
  ts = await startTestServer({ DATABASE_URL: database.url });
  storage = await openStorage(loadConfig({ DATABASE_URL: database.url, SECRETS_KEY: Buffer.alloc(32).toString("base64url") }).database);
});
afterAll(async () => {
  await storage?.close();
  await ts?.stop();
  await database?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const newKey = () => randomUUID();
const header = (key: string) => ({ header: { "Idempotency-Key": key } });
const replayed = (answer: { response: Response }) => answer.response.headers.get("idempotent-replayed");
const newEmail = () => `${randomUUID()}@example.com`;

const createUser = (client: ApiClient, key: string | undefined, body: { displayName: string; email: string; roles: ("ROLE_USER" | "ROLE_SUPER_ADMIN")[] }) =>
  client.POST("/api/v1/users", { params: key === undefined ? {} : header(key), body });

const createCredential = (client: ApiClient, userId: string, key: string | undefined, displayName = "ci") =>
  client.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId }, ...(key === undefined ? {} : header(key)) }, body: { displayName } });

async function allUsers(): Promise<string[]> {
  const ids: string[] = [];
  let token = "";
  do {
    const page = unwrap(await ts.admin.GET("/api/v1/users", { params: { query: { page_size: 100, ...(token ? { page_token: token } : {}) } } }));
    ids.push(...page.list.map((u) => u.user.id!));
    token = page.nextPageToken;
  } while (token);
  return ids;
}

async function credentialIds(userId: string): Promise<string[]> {
  const page = unwrap(await ts.admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: userId }, query: { page_size: 100 } } }));
  return page.list.map((c) => c.credential.id!);
}

async function automationCount(): Promise<number> {
  let n = 0;
  let token = "";
  do {
    const page = unwrap(await ts.admin.GET("/api/v1/automations", { params: { query: { page_size: 100, ...(token ? { page_token: token } : {}) } } }));
    n += page.list.length;
    token = page.nextPageToken;
  } while (token);
  return n;
}

/** A user to issue credentials to. */
const subject = async () => unwrap(await createUser(ts.admin, undefined, { displayName: "Subject", email: newEmail(), roles: ["ROLE_USER"] })).user.id!;

/** Posts with a bearer token of the bootstrap admin and raw headers, for what the typed client cannot send. */
async function postWithKey(path: string, key: string, body: string) {
  const token = unwrap(
    await ts.anonymous.POST("/auth/v1/token", {
      body: { grant_type: "client_credentials", client_id: "bootstrap-admin", client_secret: "bootstrap-secret-for-tests-only" },
      bodySerializer: (b) => new URLSearchParams(b as Record<string, string>).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    }),
  ).access_token;
  const response = await fetch(ts.url + path, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Idempotency-Key": key },
    body,
  });
  return { response, text: await response.text() };
}

describe("without Idempotency-Key", () => {
  it("every request is processed: two identical requests issue two credentials", async () => {
    const userId = await subject();
    const first = unwrap(await createCredential(ts.admin, userId, undefined));
    const second = await createCredential(ts.admin, userId, undefined);
    expect(unwrap(second).credential.id).not.toBe(first.credential.id);
    expect(replayed(second)).toBeNull();
    expect(await credentialIds(userId)).toHaveLength(2);
  });
});

describe("a retry with the same key and request answers the first answer and does nothing more", () => {
  it("UserService.Create: the same user, one user created, the replay marked Idempotent-Replayed", async () => {
    const key = newKey();
    const body = { displayName: "Ada", email: newEmail(), roles: ["ROLE_USER" as const] };
    const before = (await allUsers()).length;
    const first = await createUser(ts.admin, key, body);
    expect(replayed(first)).toBeNull();
    const again = await createUser(ts.admin, key, body);
    expect(again.response.status).toBe(200);
    expect(replayed(again)).toBe("true");
    expect(again.data).toEqual(first.data);
    expect(await allUsers()).toHaveLength(before + 1);
  });

  it("the body is compared as JSON: key order and whitespace do not make another request", async () => {
    const key = newKey();
    const email = newEmail();
    const first = await postWithKey("/api/v1/users", key, JSON.stringify({ displayName: "Bo", email, roles: ["ROLE_USER"] }));
    const again = await postWithKey("/api/v1/users", key, `{ "roles": [ "ROLE_USER" ], "email": "${email}",\n "displayName": "Bo" }`);
    expect(first.response.status).toBe(200);
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
  });

  it("CredentialService.Create: the same clientSecret again, which works, and one credential issued", async () => {
    const userId = await subject();
    const key = newKey();
    const first = unwrap(await createCredential(ts.admin, userId, key));
    const again = await createCredential(ts.admin, userId, key);
    expect(replayed(again)).toBe("true");
    expect(unwrap(again)).toEqual(first);
    expect(await credentialIds(userId)).toEqual([first.credential.id]);
    const client = ts.client({ clientId: first.credential.clientId, clientSecret: unwrap(again).clientSecret });
    expect((await client.GET("/api/v1/funds/policy")).response.status).toBe(200);
  });

  it("the kept answer holding a secret is sealed at rest: the database never holds the secret in clear", async () => {
    const userId = await subject();
    const key = newKey();
    const { clientSecret } = unwrap(await createCredential(ts.admin, userId, key));
    const rows = await storage.db.selectFrom("idempotency_records").select("answer").execute();
    expect(rows.filter(({ answer }) => answer?.startsWith("v1.")).length).toBeGreaterThan(0);
    for (const { answer } of rows) {
      expect(answer).not.toContain(clientSecret);
      expect(answer).not.toContain(Buffer.from(clientSecret).toString("base64"));
    }
  });

  it("Authorize keeps its 200 as the authorization's id; a replay after the hold was captured, or ran out, or a capture reversed, is still the first answer", async () => {
    const userId = await subject();
    const appId = await appWithLimit(funds(ts.admin), userId, "100");
    const spend = spends(ts.admin);
    const keptFor = async (id: string) => (await storage.db.selectFrom("idempotency_records").select("answer").where("answer", "like", `%${id}%`).execute()).map((r) => r.answer);
    const cases = [
      { body: { userId, appId, amount: money("5"), metadata: { order: "A-1" } }, then: (id: string) => spend.capture(id, { amount: money("2") }) },
      { body: { userId, appId, amount: money("6"), holdSeconds: 1 }, then: async () => ts.clock.advance(5_000) },
      { body: { userId, appId, amount: money("7"), capture: true }, then: (id: string) => spend.reverse(id, { amount: money("3") }) },
      { body: { userId, appId, amount: money("1000") }, then: async () => undefined },
    ];
    for (const { body, then } of cases) {
      const key = newKey();
      const first = unwrap(await spend.authorize(body, key));
      expect(await keptFor(first.authorization.id)).toEqual([`@${first.authorization.id}`]);
      await then(first.authorization.id);
      const again = await spend.authorize(body, key);
      expect(replayed(again)).toBe("true");
      expect(unwrap(again)).toEqual(first);
    }
  });

  it("Capture's kept answer holds no secret and is kept as JSON; its replay is the same answer", async () => {
    const userId = await subject();
    const appId = await appWithLimit(funds(ts.admin), userId, "100");
    const spend = spends(ts.admin);
    const { authorization } = unwrap(await spend.authorize({ userId, appId, amount: money("5") }));
    const key = newKey();
    const first = unwrap(await spend.capture(authorization.id, {}, key));
    const again = await spend.capture(authorization.id, {}, key);
    expect(replayed(again)).toBe("true");
    expect(unwrap(again)).toEqual(first);
    // Its Authorize's record (its key a fresh one) holds the reference; the capture's, the answer.
    const kept = await storage.db.selectFrom("idempotency_records").select("answer").where("answer", "like", `{%${authorization.id}%`).execute();
    expect(kept.map((r) => JSON.parse(r.answer!))).toEqual([{ status: 200, headers: {}, body: first }]);
  });

  it("CreateAutomation: the same automation and webhookSecret, one automation created", async () => {
    const key = newKey();
    const before = await automationCount();
    const body = { automation: { displayName: `hook ${key}`, triggers: [{ webhook: { hmac: {} } }] } };
    const first = unwrap(await ts.admin.POST("/api/v1/automations", { params: header(key), body }));
    const again = await ts.admin.POST("/api/v1/automations", { params: header(key), body });
    expect(replayed(again)).toBe("true");
    expect(unwrap(again)).toEqual(first);
    expect(first.webhookSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await automationCount()).toBe(before + 1);
  });

  it("RotateWebhookSecret: the same new secret, rotated once (the secret before it keeps its grace period)", async () => {
    const hook = await createHooked(ts);
    const key = newKey();
    const rotate = () => ts.admin.POST("/api/v1/automations/{id}/webhook-secret", { params: { path: { id: hook.id }, ...header(key) }, body: {} });
    const first = unwrap(await rotate());
    const again = await rotate();
    expect(replayed(again)).toBe("true");
    expect(unwrap(again).webhookSecret).toBe(first.webhookSecret);
    // A second rotation would have ended the grace period of the original secret.
    expectAccepted(await sendHmac(ts, hook.url, hook.secret));
    expectAccepted(await sendHmac(ts, hook.url, first.webhookSecret));
  });

  it("RotateNotificationSecret: a retry answers the same new secret; the key for another automation is 422", async () => {
    const hook = await createHooked(ts);
    const key = newKey();
    const rotate = () => ts.admin.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: hook.id }, ...header(key) }, body: {} });
    const first = unwrap(await rotate());
    const again = await rotate();
    expect(replayed(again)).toBe("true");
    expect(unwrap(again).notificationSecret).toBe(first.notificationSecret);
    // The same key for another automation is another request: refused, and nothing is rotated.
    const other = await createHooked(ts);
    expectError(await ts.admin.POST("/api/v1/automations/{id}/notification-secret", { params: { path: { id: other.id }, ...header(key) }, body: {} }), 422, "IDEMPOTENCY_KEY_REUSED");
  });

  it("NotificationDestinationService Enable and Disable: a retry answers the destination as the first call left it; the key for another destination is 422", async () => {
    const at = new Date(ts.clock.now()).toISOString();
    for (const action of ["enable", "disable"] as const) {
      const [one, other] = [await failedDestination(database.url, `${randomUUID()}.example.com:443`, at, true), await failedDestination(database.url, `${randomUUID()}.example.com:443`, at, true)];
      const key = newKey();
      const call = (id: string) => ts.admin.POST(`/api/v1/notification-destinations/{destination_id}/${action}`, { params: { path: { destination_id: id }, ...header(key) }, body: {} });
      const first = unwrap(await call(one));
      const again = await call(one);
      expect(replayed(again)).toBe("true");
      expect(unwrap(again)).toEqual(first);
      expectError(await call(other), 422, "IDEMPOTENCY_KEY_REUSED");
    }
  });

  it("a 4xx the operation answered is kept and replayed too (409 EMAIL_TAKEN), body and all", async () => {
    const email = newEmail();
    unwrap(await createUser(ts.admin, undefined, { displayName: "Taken", email, roles: ["ROLE_USER"] }));
    const key = newKey();
    const first = await createUser(ts.admin, key, { displayName: "Other", email, roles: ["ROLE_USER"] });
    expectError(first, 409, "EMAIL_TAKEN");
    const again = await createUser(ts.admin, key, { displayName: "Other", email, roles: ["ROLE_USER"] });
    expect(again.response.status).toBe(409);
    expect(replayed(again)).toBe("true");
    // The first answer, naming the first request.
    expect(again.error).toEqual(first.error);
  });

  it("a request refused by the contract (400) is not kept: fixed, it runs with the same key", async () => {
    const key = newKey();
    const email = newEmail();
    const bad = await createUser(ts.admin, key, { displayName: "", email, roles: ["ROLE_NOPE" as "ROLE_USER"] });
    expectError(bad, 400);
    const fixed = await createUser(ts.admin, key, { displayName: "Fixed", email, roles: ["ROLE_USER"] });
    expect(fixed.response.status).toBe(200);
    expect(replayed(fixed)).toBeNull();
  });
});

describe("the same key with a different request is 422 IDEMPOTENCY_KEY_REUSED, and nothing is done", () => {
  it("another body", async () => {
    const key = newKey();
    unwrap(await createUser(ts.admin, key, { displayName: "One", email: newEmail(), roles: ["ROLE_USER"] }));
    const before = await allUsers();
    const other = await createUser(ts.admin, key, { displayName: "Two", email: newEmail(), roles: ["ROLE_USER"] });
    expectError(other, 422, "IDEMPOTENCY_KEY_REUSED");
    expect(replayed(other)).toBeNull();
    expect(await allUsers()).toEqual(before);
  });

  it("another path (another user's credentials) and another operation", async () => {
    const [a, b] = [await subject(), await subject()];
    const key = newKey();
    unwrap(await createCredential(ts.admin, a, key));
    expectError(await createCredential(ts.admin, b, key), 422, "IDEMPOTENCY_KEY_REUSED");
    expect(await credentialIds(b)).toEqual([]);
    const before = await automationCount();
    expectError(await ts.admin.POST("/api/v1/automations", { params: header(key), body: { automation: { displayName: "x" } } }), 422, "IDEMPOTENCY_KEY_REUSED");
    expect(await automationCount()).toBe(before);
  });

  it("RotateWebhookSecret of another automation: refused, and its secret is not rotated", async () => {
    const [one, two] = [await createHooked(ts), await createHooked(ts)];
    const key = newKey();
    const rotate = (id: string) => ts.admin.POST("/api/v1/automations/{id}/webhook-secret", { params: { path: { id }, ...header(key) }, body: {} });
    unwrap(await rotate(one.id));
    expectError(await rotate(two.id), 422, "IDEMPOTENCY_KEY_REUSED");
    expectAccepted(await sendHmac(ts, two.url, two.secret));
  });
});

describe("a secret the caller sends is kept by its keyed digest only", () => {
  const ROTATE = "svc.api.automations.v1.AutomationService.RotateWebhookSecret";
  /** The fingerprint of a RotateWebhookSecret request, as a plain hash of what was sent. */
  const plainFingerprint = (id: string, body: object) =>
    createHash("sha256").update(JSON.stringify([ROTATE, { id }, {}, body])).digest("base64url");
  const fingerprints = async () => (await storage.db.selectFrom("idempotency_records").select("fingerprint").execute()).map((r) => r.fingerprint);

  it("RotateWebhookSecret with a sender's typed secret: replayed for the same secret, 422 for another, and no plain hash of it stored", async () => {
    const created = await ts.admin.POST("/api/v1/automations", { body: { automation: { displayName: "GitHub", isDraft: false, enabled: true, triggers: [{ webhook: { github: {} } }] } } });
    const automationId = unwrap(created).automation.id!;
    const rotate = (key: string, body: { webhookSecret?: string }) =>
      ts.admin.POST("/api/v1/automations/{id}/webhook-secret", { params: { path: { id: automationId }, ...header(key) }, body });
    // What a plain hash would be, checked on a request without a secret, whose fingerprint is one.
    const generated = newKey();
    unwrap(await rotate(generated, {}));
    expect(await fingerprints()).toContain(plainFingerprint(automationId, {}));

    const key = newKey();
    const typed = "typed-in-GitHubs-form-42";
    unwrap(await rotate(key, { webhookSecret: typed }));
    const again = await rotate(key, { webhookSecret: typed });
    expect(replayed(again)).toBe("true");
    expectError(await rotate(key, { webhookSecret: "typed-in-GitHubs-form-43" }), 422, "IDEMPOTENCY_KEY_REUSED");
    expect(await fingerprints()).not.toContain(plainFingerprint(automationId, { webhookSecret: typed }));
  });
});

describe("keys belong to the calling user", () => {
  it("another user's same key is a request of its own; the same user's other credential shares the key", async () => {
    const userId = await subject();
    const key = newKey();
    const mine = unwrap(await createCredential(ts.admin, userId, key));
    const other = await ts.userClient(["ROLE_SUPER_ADMIN"]);
    const theirs = await createCredential(other.client, userId, key);
    expect(replayed(theirs)).toBeNull();
    expect(unwrap(theirs).clientSecret).not.toBe(mine.clientSecret);
    expect(await credentialIds(userId)).toHaveLength(2);

    // A second credential of the other user: the same caller, so the same key replays.
    const second = unwrap(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: other.userId } }, body: {} }));
    const sameUser = ts.client({ clientId: second.credential.clientId, clientSecret: second.clientSecret });
    const replay = await createCredential(sameUser, userId, key);
    expect(replayed(replay)).toBe("true");
    expect(unwrap(replay)).toEqual(unwrap(theirs));
    expect(await credentialIds(userId)).toHaveLength(2);
  });
});

describe("concurrent requests with one key", () => {
  it("20 at once: exactly one user created; every answer is that user or 409 IDEMPOTENCY_KEY_IN_USE with Retry-After", async () => {
    const key = newKey();
    const body = { displayName: "Racer", email: newEmail(), roles: ["ROLE_USER" as const] };
    const before = (await allUsers()).length;
    const answers = await Promise.all(Array.from({ length: 20 }, () => createUser(ts.admin, key, body)));
    const ok = answers.filter((a) => a.response.status === 200);
    expect(ok.filter((a) => replayed(a) === null)).toHaveLength(1);
    for (const a of ok) expect(a.data).toEqual(ok[0]!.data);
    for (const a of answers.filter((x) => x.response.status !== 200)) {
      expectError(a, 409, "IDEMPOTENCY_KEY_IN_USE");
      expect(a.response.headers.get("retry-after")).toBe("1");
    }
    expect(await allUsers()).toHaveLength(before + 1);
  });

  it("20 at once on CredentialService.Create (a slow hash): one credential issued, the others in use until it is answered, then replayed", async () => {
    const userId = await subject();
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 20 }, () => createCredential(ts.admin, userId, key)));
    const first = answers.filter((a) => a.response.status === 200 && replayed(a) === null);
    expect(first).toHaveLength(1);
    // The first request hashes the new secret (scrypt) while the others arrive.
    expect(answers.filter((a) => reasonOf(a.error) === "IDEMPOTENCY_KEY_IN_USE").length).toBeGreaterThan(0);
    expect(answers.every((a) => a.response.status === 409 || a.data?.clientSecret === first[0]!.data!.clientSecret)).toBe(true);
    expect(unwrap(await createCredential(ts.admin, userId, key))).toEqual(first[0]!.data);
    expect(await credentialIds(userId)).toHaveLength(1);
  });
});

describe("the key's format", () => {
  it.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["not ASCII", "clé-1"],
    ["a control character", "a\tb"],
  ])("%s: 400 naming the header, and nothing done", async (_name, key) => {
    const before = (await allUsers()).length;
    const answer = await createUser(ts.admin, key, { displayName: "Bad key", email: newEmail(), roles: ["ROLE_USER"] });
    expectError(answer, 400, "INVALID_ARGUMENT");
    expect(JSON.stringify(answer.error)).toMatch(/idempotency-key/i);
    expect(await allUsers()).toHaveLength(before);
  });

  it("255 printable ASCII characters, spaces and symbols included, are a key", async () => {
    const key = ` !"#$%&'()*+,-./09:;<=>?@AZ[\\]^_\`az{|}~`.padEnd(255, "x").replace(/^ /, "s");
    const answer = await createUser(ts.admin, key, { displayName: "Long key", email: newEmail(), roles: ["ROLE_USER"] });
    expect(answer.response.status).toBe(200);
  });
});

// Last: the clock moves a day.
describe("retention: 24 hours", () => {
  it("a retry within 24 hours is replayed; after them the key is new again, and the sweep removes expired records", async () => {
    const userId = await subject();
    const key = newKey();
    const first = unwrap(await createCredential(ts.admin, userId, key));
    ts.clock.advance(24 * HOUR - 1000);
    const within = await createCredential(ts.admin, userId, key);
    expect(replayed(within)).toBe("true");
    expect(unwrap(within)).toEqual(first);
    ts.clock.advance(1000);
    const after = await createCredential(ts.admin, userId, key);
    expect(replayed(after)).toBeNull();
    expect(unwrap(after).credential.id).not.toBe(first.credential.id);
    expect(await credentialIds(userId)).toHaveLength(2);

    const records = new IdempotencyRecords(storage, ts.clock);
    const count = async () => (await storage.db.selectFrom("idempotency_records").select("id").execute()).length;
    const total = await count();
    expect(await records.sweep()).toBe(total - 1);
    expect(await count()).toBe(1);
    expect(replayed(await createCredential(ts.admin, userId, key))).toBe("true");
  });
});
