// A database as an earlier release left it: migrated up to `migration` only, then written by
// `write` straight through Kysely, for the tests of what the server makes of it when it migrates;
// and a connection of its own to a database, writing as an instance of an earlier release would.
import SQLite from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { loadConfig } from "../../src/config.js";
import { hashSecret } from "../../src/identity/secret-hash.js";
import { migrationsFor } from "../../src/storage/migrations.js";

/** A super admin written into an old database, and the credentials it calls with. */
export const OLD_ADMIN = { userId: "0ldUser000000001", clientId: "c1_beforeIssue15xxxx", clientSecret: "a-secret-from-before-issue-15-for-tests-only" };

/** Runs `use` on a connection of its own to the database at `url`, as another process would. */
export async function withDatabase<T>(url: string, use: (db: Kysely<any>, dialect: "sqlite" | "postgres") => Promise<T>): Promise<T> {
  const config = loadConfig({ DATABASE_URL: url });
  const db = new Kysely<any>({
    dialect:
      config.database.kind === "sqlite"
        ? new SqliteDialect({ database: new SQLite(config.database.path) })
        : new PostgresDialect({ pool: new pg.Pool({ connectionString: config.database.url, max: 1 }) }),
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

/** Writes OLD_ADMIN (a super admin and its credential) into an old database. */
export async function writeOldAdmin(db: Kysely<any>, at: string): Promise<void> {
  await db.insertInto("users").values({ id: OLD_ADMIN.userId, display_name: "Old admin", email: "old@example.com", email_key: "old@example.com", roles: '["ROLE_SUPER_ADMIN"]', created_at: at, updated_at: at }).execute();
  await db
    .insertInto("credentials")
    .values({ id: "0ldCredential001", user_id: OLD_ADMIN.userId, client_id: OLD_ADMIN.clientId, secret_hash: await hashSecret(OLD_ADMIN.clientSecret), display_name: "old", created_at: at, revoked_at: null, last_used_at: null })
    .execute();
}
