// A database as an earlier release left it: migrated up to `migration` only, then written by
// `write` straight through Kysely, for the tests of what the server makes of it when it migrates;
// and a connection of its own to a database, writing as an instance of an earlier release would.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { loadConfig } from "../../src/config.js";
import type { Clock } from "../../src/core/clock.js";
import { timeOrderedPrefix } from "../../src/core/ids.js";
import { createLogger } from "../../src/core/logger.js";
import { hashSecret } from "../../src/identity/secret-hash.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { migrationsFor } from "../../src/storage/migrations/migration-list.js";
import { createTestDatabase, type TestDatabase } from "./database.js";

/** A super admin written into an old database, and the credentials it calls with. */
export const OLD_ADMIN = { userId: "0ldUser000000001", clientId: "c1_beforeIssue15xxxx", clientSecret: "a-secret-from-before-issue-15-for-tests-only" };

/** Runs `use` on a connection of its own to the database at `url` (PostgreSQL: `connections` of them), as another process would. */
export async function withDatabase<T>(url: string, use: (db: Kysely<any>, dialect: "sqlite" | "postgres") => Promise<T>, connections = 1): Promise<T> {
  const config = loadConfig({ DATABASE_URL: url });
  const db = new Kysely<any>({
    dialect:
      config.database.kind === "sqlite"
        ? new SqliteDialect({ database: new SQLite(config.database.path) })
        : new PostgresDialect({ pool: new pg.Pool({ connectionString: config.database.url, max: connections }) }),
  });
  try {
    return await use(db, config.database.kind);
  } finally {
    await db.destroy();
  }
}

export const writeOldDatabase = (url: string, migration: string, write: (db: Kysely<any>) => Promise<void>): Promise<void> =>
  withDatabase(url, async (db, dialect) => {
    const { error } = await new Migrator({ db, provider: migrationsFor(dialect) }).migrateTo(migration);
    if (error) throw error;
    await write(db);
  });

/**
 * For a test file: before its tests, a fresh database migrated up to `migration` and written by
 * `write`, then the server started on it (which migrates it on) with `clock`; after them, both gone.
 */
export function serverOnOldDatabase(migration: string, clock: Clock, write: (db: Kysely<any>) => Promise<void>): { server: () => RunningServer; url: () => string } {
  let dir: string;
  let database: TestDatabase | undefined;
  let server: RunningServer | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `tenant-api-before-${migration.slice(0, 4)}-`));
    database = await createTestDatabase(dir);
    await writeOldDatabase(database.url, migration, write);
    server = await startServer({
      config: loadConfig({ PORT: "0", HOST: "127.0.0.1", DATABASE_URL: database.url, SECRETS_KEY_FILE: join(dir, "secrets.key"), FUND_CURRENCY: "USD", LOG_LEVEL: "silent" }),
      clock,
      logger: createLogger("silent"),
    });
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { server: () => server!, url: () => database!.url };
}

/** Writes OLD_ADMIN (a super admin and its credential) into an old database. */
export async function writeOldAdmin(db: Kysely<any>, at: string): Promise<void> {
  await db.insertInto("users").values({ id: OLD_ADMIN.userId, display_name: "Old admin", email: "old@example.com", email_key: "old@example.com", roles: '["ROLE_SUPER_ADMIN"]', created_at: at, updated_at: at }).execute();
  await db
    .insertInto("credentials")
    .values({ id: "0ldCredential001", user_id: OLD_ADMIN.userId, client_id: OLD_ADMIN.clientId, secret_hash: await hashSecret(OLD_ADMIN.clientSecret), display_name: "old", created_at: at, revoked_at: null, last_used_at: null })
    .execute();
}

/** Writes a ROLE_USER subject and a USD fund policy in UTC into an old database, for its spends. */
export async function writeOldSpender(db: Kysely<any>, userId: string, at: string): Promise<void> {
  const email = `${userId.toLowerCase()}@example.com`;
  await db.insertInto("users").values({ id: userId, display_name: "Old subject", email, email_key: email, roles: '["ROLE_USER"]', created_at: at, updated_at: at }).execute();
  await db.insertInto("fund_policy").values({ tenant_id: "default", currency_code: "USD", time_zone: "UTC", default_controls: null, updated_at: null }).execute();
}

const UNIT = 1_000_000_000n;

/** The id of an authorization made at `at`: time-ordered as every release wrote them, `name` (8 characters) its random part. */
export const oldAuthorizationId = (name: string, at: string) => timeOrderedPrefix(Date.parse(at)) + name;

/** A spend authorization row of `units` USD as the releases before 0018 wrote it (captured in whole when CAPTURED), its id `oldAuthorizationId(name, at)`. */
export const oldAuthorization = (v: {
  name: string;
  userId: string;
  appId: string;
  window: { window_start: string; window_end: string };
  units: bigint;
  state: string;
  expiresAt: string | null;
  reversedUnits?: bigint;
  decision: object;
  at: string;
}) => ({
  id: oldAuthorizationId(v.name, v.at),
  user_id: v.userId,
  app_id: v.appId,
  currency_code: "USD",
  amount_nanos: v.units * UNIT,
  captured_nanos: v.state === "CAPTURED" ? v.units * UNIT : 0n,
  reversed_nanos: (v.reversedUnits ?? 0n) * UNIT,
  state: v.state,
  expires_at: v.expiresAt,
  ...v.window,
  decision: JSON.stringify(v.decision),
  metadata: "{}",
  created_at: v.at,
  updated_at: v.at,
});
