// Migration 0009_spend_authorizations. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type CreateTableBuilder, type Kysely, type Migration, sql } from "kysely";
import { type TextType } from "./migration-kit.js";

// Issue 15: spend authorizations, their append-only ledger, and the per-window usage row every
// decision and change in a window locks (src/funds/spends/spend-usage.ts). Amounts are int64 nanos.
// The spend tables are written by every decision, so each B-tree here is one a decision pays for.
// On SQLite the narrow tables keyed by their natural key (usage, ledger) are stored WITHOUT ROWID:
// the key's index is the table, one B-tree instead of two. spend_authorizations keeps its rowid:
// its rows (the decision's JSON) are near 1 KB, and as keys of a WITHOUT ROWID B-tree they made a
// commit of 8 decisions write 23 WAL pages instead of 19. Authorization ids are time-ordered
// (src/core/ids.ts: they sort as (created_at, id) do), so `id` alone orders List newest first and
// every List index ends with it.
export const m0009 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    const clustered = (builder: CreateTableBuilder<any, any>) => (dialect === "sqlite" ? builder.modifyEnd(sql`without rowid`) : builder);
    await db.schema
      .createTable("spend_authorizations")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("user_id", text, (c) => c.notNull().references("users.id"))
      .addColumn("app_id", text, (c) => c.notNull())
      .addColumn("currency_code", text, (c) => c.notNull())
      .addColumn("amount_nanos", "bigint", (c) => c.notNull())
      .addColumn("captured_nanos", "bigint", (c) => c.notNull())
      .addColumn("reversed_nanos", "bigint", (c) => c.notNull())
      .addColumn("state", text, (c) => c.notNull())
      .addColumn("expires_at", text)
      .addColumn("window_start", text, (c) => c.notNull())
      .addColumn("window_end", text, (c) => c.notNull())
      .addColumn("decision", text, (c) => c.notNull())
      .addColumn("metadata", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("updated_at", text, (c) => c.notNull())
      .execute();
    // The held sum of a window: the unexpired pending holds, one range of this partial index.
    await sql`create index spend_authorizations_held on spend_authorizations (user_id, app_id, window_start, expires_at, amount_nanos) where state = 'PENDING'`.execute(db);
    // List by each filter it seeks on (no filter: the primary key). An app service's List over
    // several apps seeks each of them in spend_authorizations_by_app.
    await db.schema.createIndex("spend_authorizations_by_user").on("spend_authorizations").columns(["user_id", "id"]).execute();
    await db.schema.createIndex("spend_authorizations_by_user_app").on("spend_authorizations").columns(["user_id", "app_id", "id"]).execute();
    await db.schema.createIndex("spend_authorizations_by_app").on("spend_authorizations").columns(["app_id", "id"]).execute();
    // The fund policy's CURRENCY_IN_USE check: the least and the greatest currency of any spend.
    await db.schema.createIndex("spend_authorizations_by_currency").on("spend_authorizations").columns(["currency_code"]).execute();
    // Keyed by authorization: an authorization's entries are one range of the key.
    await clustered(
      db.schema
        .createTable("spend_ledger")
        .addColumn("authorization_id", text, (c) => c.notNull().references("spend_authorizations.id"))
        .addColumn("id", text, (c) => c.notNull())
        .addColumn("user_id", text, (c) => c.notNull())
        .addColumn("app_id", text, (c) => c.notNull())
        .addColumn("window_start", text, (c) => c.notNull())
        .addColumn("kind", text, (c) => c.notNull())
        .addColumn("amount_nanos", "bigint", (c) => c.notNull())
        .addColumn("at", text, (c) => c.notNull())
        .addPrimaryKeyConstraint("spend_ledger_pk", ["authorization_id", "id"]),
    ).execute();
    await clustered(
      db.schema
        .createTable("spend_usage")
        .addColumn("user_id", text, (c) => c.notNull())
        .addColumn("app_id", text, (c) => c.notNull())
        .addColumn("window_start", text, (c) => c.notNull())
        .addColumn("window_end", text, (c) => c.notNull())
        .addColumn("spent_nanos", "bigint", (c) => c.notNull())
        .addPrimaryKeyConstraint("spend_usage_pk", ["user_id", "app_id", "window_start"]),
    ).execute();
    // PostgreSQL: a window's lock and the holds under it in one round trip (src/funds/spends/spend-usage.ts).
    // A VOLATILE function takes a fresh snapshot for each statement, so the sum sees every hold
    // committed by the lock's previous holder; one statement (a CTE) would sum from the snapshot
    // taken before it waited for the lock, and miss them.
    if (dialect === "postgres") {
      await sql`
        create function spend_lock_window(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_now text)
        returns table (spent text, held text) language plpgsql volatile as $$
        declare
          v_spent bigint;
        begin
          insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos)
          values (p_user_id, p_app_id, p_window_start, p_window_end, 0)
          on conflict (user_id, app_id, window_start) do update set window_end = excluded.window_end
          returning spent_nanos into v_spent;
          return query
            select v_spent::text, coalesce(sum(a.amount_nanos), 0)::text
            from spend_authorizations a
            where a.user_id = p_user_id and a.app_id = p_app_id and a.window_start = p_window_start
              and a.state = 'PENDING' and a.expires_at > p_now;
        end
        $$`.execute(db);
    }
  },
});
