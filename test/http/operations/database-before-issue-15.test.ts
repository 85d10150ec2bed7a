// A database written before the app service role and the policy's time zone (migrations up to
// 0007): once the server has migrated it, the credentials it held are bound to no app (and still
// work), and the tenant's policy is in UTC, as the contract says of tenants created before the field.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient, unwrap } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { ManualClock } from "../../../src/core/clock.js";
import { createLogger } from "../../../src/core/logger.js";
import { startServer, type RunningServer } from "../../../src/server.js";
import { createTestDatabase, testDialect, type TestDatabase } from "../../support/database.js";
import { OLD_ADMIN, writeOldAdmin, writeOldDatabase } from "../../support/old-database.js";

const OLD = { clientId: OLD_ADMIN.clientId, clientSecret: OLD_ADMIN.clientSecret };

let dir: string;
let database: TestDatabase;
let server: RunningServer;

/** Migrates a fresh database to 0007 and writes what a server of that time had: a user, a credential, the policy. */
const oldDatabase = (url: string) =>
  writeOldDatabase(url, "0007_instance_heartbeats", async (db) => {
    await writeOldAdmin(db, "2026-11-01T08:00:00.000Z");
    await db.insertInto("fund_policy").values({ tenant_id: "default", currency_code: "EUR", default_controls: null, updated_at: null }).execute();
  });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-before-15-"));
  database = await createTestDatabase(dir);
  await oldDatabase(database.url);
  server = await startServer({
    config: loadConfig({ PORT: "0", HOST: "127.0.0.1", DATABASE_URL: database.url, SECRETS_KEY_FILE: join(dir, "secrets.key"), FUND_CURRENCY: "USD", LOG_LEVEL: "silent" }),
    clock: new ManualClock(Date.parse("2026-11-20T09:00:00Z")),
    logger: createLogger("silent"),
  });
});
afterAll(async () => {
  await server?.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe(`a database from before issue 15 (${testDialect()})`, () => {
  it("keeps its credentials working, bound to no app, and its policy, in UTC", async () => {
    const api = createApiClient({ baseUrl: server.url, credentials: OLD });
    expect(unwrap(await api.GET("/api/v1/funds/policy")).fundPolicy).toEqual({ currencyCode: "EUR", timeZone: "UTC", defaultControls: null, updatedAt: null });
    const listed = unwrap(await api.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: "0ldUser000000001" } } })).list;
    expect(listed.map((c) => [c.credential.id, c.credential.appIds])).toEqual([["0ldCredential001", []]]);
  });
});
