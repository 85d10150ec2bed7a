// Schema migrations, written once with Kysely's schema builder so that they run on SQLite and on
// PostgreSQL alike. Append new migrations; never edit one that has shipped.
import { type Kysely, type Migration, type MigrationProvider, sql } from "kysely";

const m0001: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("users")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("display_name", "text", (c) => c.notNull())
      .addColumn("email", "text", (c) => c.notNull())
      .addColumn("email_key", "text", (c) => c.notNull().unique())
      .addColumn("roles", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("credentials")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
      .addColumn("client_id", "text", (c) => c.notNull().unique())
      .addColumn("secret_hash", "text", (c) => c.notNull())
      .addColumn("display_name", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("revoked_at", "text")
      .addColumn("last_used_at", "text")
      .execute();
    await db.schema.createIndex("credentials_by_user").on("credentials").columns(["user_id", "created_at", "id"]).execute();
    await db.schema
      .createTable("signing_keys")
      .addColumn("kid", "text", (c) => c.primaryKey())
      .addColumn("private_jwk", "text", (c) => c.notNull())
      .addColumn("public_jwk", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("settings")
      .addColumn("key", "text", (c) => c.primaryKey())
      .addColumn("value", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("fund_policy")
      .addColumn("tenant_id", "text", (c) => c.primaryKey())
      .addColumn("currency_code", "text", (c) => c.notNull())
      .addColumn("default_controls", "text")
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    // Removed rows stay (deleted_at set); at most one live row per key, enforced by a partial index.
    await db.schema
      .createTable("subject_app_limits")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
      .addColumn("app_id", "text", (c) => c.notNull())
      .addColumn("controls", "text", (c) => c.notNull())
      .addColumn("suspended", "integer", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .addColumn("deleted_at", "text")
      .execute();
    await sql`create unique index subject_app_limits_live on subject_app_limits (user_id, app_id) where deleted_at is null`.execute(db);
    await sql`create index subject_app_limits_by_app on subject_app_limits (app_id, user_id) where deleted_at is null`.execute(db);
    await db.schema
      .createTable("app_caps")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("app_id", "text", (c) => c.notNull())
      .addColumn("controls", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .addColumn("deleted_at", "text")
      .execute();
    await sql`create unique index app_caps_live on app_caps (app_id) where deleted_at is null`.execute(db);
  },
};

export const migrations: MigrationProvider = {
  async getMigrations() {
    return { "0001_identity_and_funds": m0001 };
  },
};
