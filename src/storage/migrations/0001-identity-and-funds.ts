// Migration 0001_identity_and_funds. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration, sql } from "kysely";
import { type TextType } from "./migration-kit.js";

export const m0001 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("users")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("display_name", text, (c) => c.notNull())
      .addColumn("email", text, (c) => c.notNull())
      .addColumn("email_key", text, (c) => c.notNull().unique())
      .addColumn("roles", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("updated_at", text, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("credentials")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("user_id", text, (c) => c.notNull().references("users.id"))
      .addColumn("client_id", text, (c) => c.notNull().unique())
      .addColumn("secret_hash", text, (c) => c.notNull())
      .addColumn("display_name", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("revoked_at", text)
      .addColumn("last_used_at", text)
      .execute();
    await db.schema.createIndex("credentials_by_user").on("credentials").columns(["user_id", "created_at", "id"]).execute();
    await db.schema
      .createTable("signing_keys")
      .addColumn("kid", text, (c) => c.primaryKey())
      .addColumn("private_jwk", text, (c) => c.notNull())
      .addColumn("public_jwk", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("settings")
      .addColumn("key", text, (c) => c.primaryKey())
      .addColumn("value", text, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("fund_policy")
      .addColumn("tenant_id", text, (c) => c.primaryKey())
      .addColumn("currency_code", text, (c) => c.notNull())
      .addColumn("default_controls", text)
      // Null until the policy is first changed through the API.
      .addColumn("updated_at", text)
      .execute();
    // Removed rows stay (deleted_at set); at most one live row per key, enforced by a partial index.
    await db.schema
      .createTable("subject_app_limits")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("user_id", text, (c) => c.notNull().references("users.id"))
      .addColumn("app_id", text, (c) => c.notNull())
      .addColumn("controls", text, (c) => c.notNull())
      .addColumn("suspended", "integer", (c) => c.notNull())
      .addColumn("amount_currency", text)
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("updated_at", text, (c) => c.notNull())
      .addColumn("deleted_at", text)
      .execute();
    await sql`create unique index subject_app_limits_live on subject_app_limits (user_id, app_id) where deleted_at is null`.execute(db);
    // Keyset pagination seeks on (user_id, app_id) (Search, and a caller's own rows by app_id) through
    // subject_app_limits_live; the others serve the Search filters and the currency-in-use check.
    await sql`create index subject_app_limits_by_app on subject_app_limits (app_id, user_id) where deleted_at is null`.execute(db);
    await sql`create index subject_app_limits_by_suspended on subject_app_limits (suspended, user_id, app_id) where deleted_at is null`.execute(db);
    await sql`create index subject_app_limits_by_currency on subject_app_limits (amount_currency) where deleted_at is null`.execute(db);
    await db.schema
      .createTable("app_caps")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("app_id", text, (c) => c.notNull())
      .addColumn("controls", text, (c) => c.notNull())
      .addColumn("amount_currency", text)
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("updated_at", text, (c) => c.notNull())
      .addColumn("deleted_at", text)
      .execute();
    await sql`create unique index app_caps_live on app_caps (app_id) where deleted_at is null`.execute(db);
    await sql`create index app_caps_by_currency on app_caps (amount_currency) where deleted_at is null`.execute(db);
  },
});
