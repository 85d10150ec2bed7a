// Schema migrations, written once with Kysely's schema builder so that they run on SQLite and on
// PostgreSQL alike. Append new migrations; never edit one that has shipped.
//
// Upgrades and rollbacks (docs/operating.md "Upgrading"). During a rolling upgrade the instances of the release
// before (N-1) keep serving on the database release N has migrated, and a rollback starts N-1 again
// on it. So every schema change is expand-then-contract across two releases: release N adds what it
// needs (tables, columns with defaults, indexes, functions with the signatures N-1 calls) and keeps
// writing what N-1 reads; only release N+1, which no instance of N-1 runs beside, removes what N
// stopped using. Each migration below says whether an instance of the release before the one that
// adds it keeps working on a database it was applied to, on each dialect (`earlier`: RUNS, STOPS,
// RUNS_ON_POSTGRES), and why when it does not. ./migrate.ts records that in the database for every
// applied migration (table migration_compatibility), so that a release that finds migrations it does
// not know, written by the release after it, starts only if they were written to run with it.
import { type CreateTableBuilder, type Kysely, type Migration, type MigrationProvider, type RawBuilder, sql } from "kysely";

/**
 * The text type of every column. PostgreSQL compares text by the database's locale unless told
 * otherwise; "C" makes it compare bytes, as SQLite does, so keyset pages and sort orders are the
 * same on both.
 */
type TextType = "text" | RawBuilder<unknown>;

const m0001 = (text: TextType): Migration => ({
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

const m0002 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("automations")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("display_name", text, (c) => c.notNull())
      .addColumn("description", text, (c) => c.notNull())
      .addColumn("is_draft", "integer", (c) => c.notNull())
      .addColumn("enabled", "integer", (c) => c.notNull())
      .addColumn("steps", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("updated_at", text, (c) => c.notNull())
      .addColumn("last_executed_at", text)
      .execute();
    await db.schema
      .createTable("webhook_listeners")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("automation_id", text, (c) => c.notNull().unique().references("automations.id").onDelete("cascade"))
      .addColumn("method", text, (c) => c.notNull())
      .addColumn("jwks_url", text)
      .addColumn("allowed_cidrs", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("webhook_secrets")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("listener_id", text, (c) => c.notNull().references("webhook_listeners.id").onDelete("cascade"))
      .addColumn("sealed", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("expires_at", text)
      .execute();
    await db.schema.createIndex("webhook_secrets_by_listener").on("webhook_secrets").columns(["listener_id"]).execute();
    // The primary key settles duplicate deliveries: one event id per listener, by the database.
    await db.schema
      .createTable("webhook_events")
      .addColumn("listener_id", text, (c) => c.notNull())
      .addColumn("event_id", text, (c) => c.notNull())
      .addColumn("automation_id", text, (c) => c.notNull())
      .addColumn("received_at", text, (c) => c.notNull())
      .addColumn("outcome", text, (c) => c.notNull())
      .addColumn("not_run_reason", text)
      .addColumn("execution_id", text)
      .addPrimaryKeyConstraint("webhook_events_pk", ["listener_id", "event_id"])
      .execute();
    await db.schema.createIndex("webhook_events_by_automation").on("webhook_events").columns(["automation_id", "received_at", "event_id"]).execute();
    await db.schema.createIndex("webhook_events_by_age").on("webhook_events").columns(["received_at"]).execute();
    await db.schema
      .createTable("automation_executions")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("automation_id", text, (c) => c.notNull())
      .addColumn("event_id", text)
      .addColumn("state", text, (c) => c.notNull())
      .addColumn("context", text, (c) => c.notNull())
      .addColumn("steps", text, (c) => c.notNull())
      .addColumn("step_results", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("completed_at", text)
      .addColumn("lease_until", text)
      .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.createIndex("automation_executions_by_created").on("automation_executions").columns(["created_at", "id"]).execute();
    await db.schema.createIndex("automation_executions_by_automation").on("automation_executions").columns(["automation_id", "created_at", "id"]).execute();
    await db.schema.createIndex("automation_executions_runnable").on("automation_executions").columns(["state", "lease_until"]).execute();
  },
});

// The worker claims the oldest pending execution: an index in that order among pending rows, so a
// claim is one index seek however long the backlog or the history of finished runs.
const m0003: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex("automation_executions_queue").on("automation_executions").columns(["state", "created_at", "id"]).execute();
  },
};

// Two costs of every accepted event removed. The queue index serves both kinds of claim (pending,
// and running with a lapsed lease: few rows), so the runnable index only cost every insert and state
// change of an execution. automations.last_executed_at is read from the executions instead.
const m0004: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.dropIndex("automation_executions_runnable").execute();
    await db.schema.alterTable("automations").dropColumn("last_executed_at").execute();
  },
};

// The token endpoint's failure counts, shared by every instance on the database.
const m0005 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("token_failures")
      .addColumn("key", text, (c) => c.primaryKey())
      .addColumn("attempts", text, (c) => c.notNull())
      .addColumn("last_at", text, (c) => c.notNull())
      .execute();
    await db.schema.createIndex("token_failures_by_age").on("token_failures").columns(["last_at"]).execute();
  },
});

// Idempotency-Key records: one per caller and key, claimed by a unique key across instances.
const m0006 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("idempotency_records")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("fingerprint", text, (c) => c.notNull())
      .addColumn("owner", text, (c) => c.notNull())
      .addColumn("locked_until", text)
      .addColumn("answer", text)
      .addColumn("created_at", text, (c) => c.notNull())
      .execute();
    await db.schema.createIndex("idempotency_records_by_age").on("idempotency_records").columns(["created_at"]).execute();
  },
});

// One row per running instance, refreshed every few seconds: how many share the rate limits.
const m0007 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("instance_heartbeats")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("started_at", text, (c) => c.notNull())
      .addColumn("last_seen", text, (c) => c.notNull())
      .execute();
  },
});

// Issue 15: an app service credential's apps (`[]` for the credentials before it, none of which
// was of an app service), and the fund policy's time zone (UTC for the tenants before it).
const m0008 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("credentials").addColumn("app_ids", text, (c) => c.notNull().defaultTo("[]")).execute();
    await db.schema.alterTable("fund_policy").addColumn("time_zone", text, (c) => c.notNull().defaultTo("UTC")).execute();
  },
});

// Issue 15: spend authorizations, their append-only ledger, and the per-window usage row every
// decision and change in a window locks (src/funds/spends/spend-usage.ts). Amounts are int64 nanos.
// The spend tables are written by every decision, so each B-tree here is one a decision pays for.
// On SQLite the narrow tables keyed by their natural key (usage, ledger) are stored WITHOUT ROWID:
// the key's index is the table, one B-tree instead of two. spend_authorizations keeps its rowid:
// its rows (the decision's JSON) are near 1 KB, and as keys of a WITHOUT ROWID B-tree they made a
// commit of 8 decisions write 23 WAL pages instead of 19. Authorization ids are time-ordered
// (src/core/ids.ts: they sort as (created_at, id) do), so `id` alone orders List newest first and
// every List index ends with it.
const m0009 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
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

// Issue 16: one version row per kind of cached state (first: "principals", what an access token's
// check reads), bumped in the transaction of every change to it; each instance polls the rows it
// caches and drops what it holds when one moves (src/storage/change-versions.ts).
const m0010 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("change_versions")
      .addColumn("name", text, (c) => c.primaryKey())
      .addColumn("version", "bigint", (c) => c.notNull())
      .execute();
    await db.insertInto("change_versions").values({ name: "principals", version: 0 }).execute();
  },
});

// Issue 16: the fund policy, read by every policy and effective-limit read, cached per process.
const m0011: Migration = {
  async up(db: Kysely<any>) {
    await db.insertInto("change_versions").values({ name: "fund_policy", version: 0 }).execute();
  },
};

// Issue 15, PostgreSQL only: the round trips of a decision or a change fold what were separate
// statements (src/funds/effective.ts, src/funds/spends/spend-writes.ts). All are VOLATILE functions: each
// statement in them takes its own snapshot, so what is read after a lock (the layers after the
// policy's shared lock, a row after its window's) sees what was committed while it waited, as a
// separate statement after the lock would. The kept answer's update (spend_settle) is
// IdempotencyRecords.completeIn's; since the spend operations take no claim (src/http/idempotency.ts)
// only an instance of an earlier release passes an answer to it.
const m0012 = (dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== "postgres") return;
    await sql`
      create function spend_policy_layers(p_lock text, p_tenant_id text, p_user_id text, p_app_id text)
      returns table (currency_code text, time_zone text, default_controls text, updated_at text, user_id text, row_controls text, cap_controls text)
      language plpgsql volatile as $$
      begin
        perform pg_advisory_xact_lock_shared(hashtextextended(p_lock, 0));
        return query
          select p.currency_code, p.time_zone, p.default_controls, p.updated_at,
            (select u.id from users u where u.id = p_user_id),
            (select s.controls from subject_app_limits s where s.user_id = p_user_id and s.app_id = p_app_id and s.deleted_at is null),
            (select c.controls from app_caps c where c.app_id = p_app_id and c.deleted_at is null)
          from fund_policy p where p.tenant_id = p_tenant_id;
      end
      $$`.execute(db);
    // What a decision and a change end with: the window's spent counter (when p_spent_delta is not 0)
    // and the request's idempotent answer (when p_answer_id is set, only while p_answer_owner holds
    // its record): true unless that answer was not kept.
    await sql`
      create function spend_settle(p_user_id text, p_app_id text, p_window_start text, p_spent_delta bigint,
        p_answer_id text, p_answer_owner text, p_answer text)
      returns boolean language plpgsql volatile as $$
      begin
        if p_spent_delta <> 0 then
          update spend_usage set spent_nanos = spent_nanos + p_spent_delta
          where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start;
        end if;
        if p_answer_id is null then
          return true;
        end if;
        update idempotency_records set answer = p_answer, locked_until = null where id = p_answer_id and owner = p_answer_owner;
        return found;
      end
      $$`.execute(db);
    // The authorization, its first ledger entry (when p_entry_id is set), then spend_settle.
    await sql`
      create function spend_record_authorization(
        p_id text, p_user_id text, p_app_id text, p_currency_code text, p_amount bigint, p_captured bigint,
        p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text, p_at text,
        p_entry_id text, p_entry_kind text, p_entry_amount bigint, p_entry_at text, p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
      returns boolean language plpgsql volatile as $$
      begin
        insert into spend_authorizations (id, user_id, app_id, currency_code, amount_nanos, captured_nanos, reversed_nanos, state,
          expires_at, window_start, window_end, decision, metadata, created_at, updated_at)
        values (p_id, p_user_id, p_app_id, p_currency_code, p_amount, p_captured, 0, p_state,
          p_expires_at, p_window_start, p_window_end, p_decision, p_metadata, p_at, p_at);
        if p_entry_id is not null then
          insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
          values (p_entry_id, p_id, p_user_id, p_app_id, p_window_start, p_entry_kind, p_entry_amount, p_entry_at);
        end if;
        return spend_settle(p_user_id, p_app_id, p_window_start, p_spent_delta, p_answer_id, p_answer_owner, p_answer);
      end
      $$`.execute(db);
    // A change's first round trip: the window's lock, then the authorization as it is after it.
    await sql`
      create function spend_lock_row(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_id text)
      returns table (id text, user_id text, app_id text, currency_code text, state text, expires_at text, window_start text, window_end text,
        decision text, metadata text, created_at text, updated_at text, amount text, captured text, reversed text)
      language plpgsql volatile as $$
      #variable_conflict use_column
      begin
        insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos)
        values (p_user_id, p_app_id, p_window_start, p_window_end, 0)
        on conflict (user_id, app_id, window_start) do update set window_end = excluded.window_end;
        return query
          select a.id, a.user_id, a.app_id, a.currency_code, a.state, a.expires_at, a.window_start, a.window_end,
            a.decision, a.metadata, a.created_at, a.updated_at, a.amount_nanos::text, a.captured_nanos::text, a.reversed_nanos::text
          from spend_authorizations a where a.id = p_id;
      end
      $$`.execute(db);
    // A change's writes: the authorization's state and amounts, one or two ledger entries, then spend_settle.
    await sql`
      create function spend_record_change(
        p_id text, p_state text, p_captured bigint, p_reversed bigint, p_at text, p_user_id text, p_app_id text, p_window_start text,
        p_first_id text, p_first_kind text, p_first_amount bigint, p_second_id text, p_second_kind text, p_second_amount bigint,
        p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
      returns boolean language plpgsql volatile as $$
      begin
        update spend_authorizations set state = p_state, captured_nanos = p_captured, reversed_nanos = p_reversed, updated_at = p_at where id = p_id;
        insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
        values (p_first_id, p_id, p_user_id, p_app_id, p_window_start, p_first_kind, p_first_amount, p_at);
        if p_second_id is not null then
          insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
          values (p_second_id, p_id, p_user_id, p_app_id, p_window_start, p_second_kind, p_second_amount, p_at);
        end if;
        return spend_settle(p_user_id, p_app_id, p_window_start, p_spent_delta, p_answer_id, p_answer_owner, p_answer);
      end
      $$`.execute(db);
  },
});

// Issue 16, PostgreSQL: a controls row's guarded write in one round trip (src/funds/controls-write.ts).
// It takes the row's lock and the fund policy's shared one, then writes `p_row` (a whole row: inserted
// when no row was live, else the live row updated to it) only if the currency and the live row are
// still as the caller read them; false, writing nothing, when not. A VOLATILE function takes a fresh
// snapshot for each statement, so its checks see what the locks' previous holders committed.
const m0013 = (dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== "postgres") return;
    await sql`
      create function write_controls_row(p_table text, p_live_key text[], p_lock text, p_policy_lock text,
                                         p_tenant_id text, p_currency text, p_seen_controls text, p_row jsonb)
      returns boolean language plpgsql volatile as $$
      declare
        v_id text;
        v_controls text;
        v_columns text;
      begin
        perform pg_advisory_xact_lock(hashtextextended(p_lock, 0));
        perform pg_advisory_xact_lock_shared(hashtextextended(p_policy_lock, 0));
        if not exists (select from fund_policy where tenant_id = p_tenant_id and currency_code = p_currency) then
          return false;
        end if;
        execute format('select id, controls from %I where deleted_at is null and %s', p_table,
                       (select string_agg(format('%I = $1->>%L', k, k), ' and ') from unnest(p_live_key) k))
          into v_id, v_controls using p_row;
        if v_controls is distinct from p_seen_controls
           or (p_seen_controls is not null and v_id is distinct from p_row->>'id') then
          return false;
        end if;
        if v_id is null then
          execute format('insert into %I select * from jsonb_populate_record(null::%I, $1)', p_table, p_table) using p_row;
        else
          select string_agg(format('%I', k), ', ') into v_columns from jsonb_object_keys(p_row) k where k <> 'id';
          execute format('update %I set (%s) = (select %s from jsonb_populate_record(null::%I, $1)) where id = $1->>''id''',
                         p_table, v_columns, v_columns, p_table) using p_row;
        end if;
        return true;
      end
      $$`.execute(db);
  },
});

// Issue 16, PostgreSQL: write_controls_row with static statements per table instead of dynamic SQL.
// A dynamic statement (EXECUTE) is parsed and planned on every call; static ones are planned once per
// connection and kept. Same signature and behaviour: `p_live_key` is no longer read (each table's
// live key is written out), and is kept so that an instance still running the previous release
// calls it unchanged during a rolling upgrade. `p_row` is a whole row, as before.
const m0014 = (dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== "postgres") return;
    await sql`
      create or replace function write_controls_row(p_table text, p_live_key text[], p_lock text, p_policy_lock text,
                                                    p_tenant_id text, p_currency text, p_seen_controls text, p_row jsonb)
      returns boolean language plpgsql volatile as $$
      declare
        v_id text;
        v_controls text;
      begin
        perform pg_advisory_xact_lock(hashtextextended(p_lock, 0));
        perform pg_advisory_xact_lock_shared(hashtextextended(p_policy_lock, 0));
        if not exists (select from fund_policy where tenant_id = p_tenant_id and currency_code = p_currency) then
          return false;
        end if;
        if p_table = 'subject_app_limits' then
          select id, controls into v_id, v_controls from subject_app_limits
            where deleted_at is null and user_id = p_row->>'user_id' and app_id = p_row->>'app_id';
        elsif p_table = 'app_caps' then
          select id, controls into v_id, v_controls from app_caps where deleted_at is null and app_id = p_row->>'app_id';
        else
          raise exception 'write_controls_row: no such controls table %', p_table;
        end if;
        if v_controls is distinct from p_seen_controls
           or (p_seen_controls is not null and v_id is distinct from p_row->>'id') then
          return false;
        end if;
        if p_table = 'subject_app_limits' then
          if v_id is null then
            insert into subject_app_limits select * from jsonb_populate_record(null::subject_app_limits, p_row);
          else
            update subject_app_limits t
              set user_id = r.user_id, app_id = r.app_id, controls = r.controls, suspended = r.suspended, amount_currency = r.amount_currency,
                  created_at = r.created_at, updated_at = r.updated_at, deleted_at = r.deleted_at
              from jsonb_populate_record(null::subject_app_limits, p_row) r where t.id = r.id;
          end if;
        elsif v_id is null then
          insert into app_caps select * from jsonb_populate_record(null::app_caps, p_row);
        else
          update app_caps t
            set app_id = r.app_id, controls = r.controls, amount_currency = r.amount_currency,
                created_at = r.created_at, updated_at = r.updated_at, deleted_at = r.deleted_at
            from jsonb_populate_record(null::app_caps, p_row) r where t.id = r.id;
        end if;
        return true;
      end
      $$`.execute(db);
  },
});

// Issue 16: webhook listeners with their secrets and their automation's state, read by every
// delivery, cached per process (src/webhooks/listeners.ts).
const m0015: Migration = {
  async up(db: Kysely<any>) {
    await db.insertInto("change_versions").values({ name: "listeners", version: 0 }).execute();
  },
};

// Issue 15: a window's held amount as a counter on its usage row, not a sum over every pending hold.
// The sum read the whole unexpired range of spend_authorizations_held on every decision: linear in
// the window's open holds (about 0.09 ms per 1,000 on SQLite), and under the write lock. Invariant:
// `held_nanos` is the sum of the window's PENDING holds that expire after `held_through`. Triggers
// keep it as the holds are written, whoever writes them (an instance of the earlier release too): a
// hold adds to it when it is created and leaves it when it leaves PENDING (captured, released), in
// both cases only if it expires after `held_through`. A decision sweeps out the holds expired since
// `held_through` (each hold once in its life) and, when there were any, moves `held_through` on. The
// held amount at any instant is the counter corrected by the holds between `held_through` and that
// instant, in either direction, so a clock behind another instance's reads exactly too
// (src/funds/spends/spend-usage.ts). Backfilled with `held_through` '' (before every instant): every
// pending hold counts until the first sweep. A hold's window row exists before it: every decision
// locks (creates) it first.
const m0016 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("spend_usage").addColumn("held_nanos", "bigint", (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable("spend_usage").addColumn("held_through", text, (c) => c.notNull().defaultTo("")).execute();
    await sql`
      update spend_usage set held_nanos = (
        select coalesce(sum(a.amount_nanos), 0) from spend_authorizations a
        where a.user_id = spend_usage.user_id and a.app_id = spend_usage.app_id and a.window_start = spend_usage.window_start and a.state = 'PENDING')`.execute(db);
    const counted = (row: "new" | "old") =>
      sql.raw(`user_id = ${row}.user_id and app_id = ${row}.app_id and window_start = ${row}.window_start and held_through < ${row}.expires_at`);
    if (dialect === "sqlite") return sqliteHeldTriggers(db, counted);
    await sql`
      create function spend_held_counter() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          update spend_usage set held_nanos = held_nanos + new.amount_nanos where ${counted("new")};
        else
          update spend_usage set held_nanos = held_nanos - old.amount_nanos where ${counted("old")};
        end if;
        return null;
      end
      $$`.execute(db);
    await sql`
      create trigger spend_held_created after insert on spend_authorizations
      for each row when (new.state = 'PENDING') execute function spend_held_counter()`.execute(db);
    await sql`
      create trigger spend_held_left after update of state on spend_authorizations
      for each row when (old.state = 'PENDING' and new.state <> 'PENDING') execute function spend_held_counter()`.execute(db);
    // The lock, then the sweep and the held amount at p_now, each statement with its own snapshot
    // (see spend_lock_window in 0009). The counter is written only when the sweep found holds.
    await sql`
      create or replace function spend_lock_window(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_now text)
      returns table (spent text, held text) language plpgsql volatile as $$
      declare
        v_spent bigint;
        v_held bigint;
        v_through text;
        v_moved bigint;
      begin
        insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
        values (p_user_id, p_app_id, p_window_start, p_window_end, 0, 0, p_now)
        on conflict (user_id, app_id, window_start) do update set window_end = excluded.window_end
        returning spent_nanos, held_nanos, held_through into v_spent, v_held, v_through;
        select coalesce(sum(a.amount_nanos), 0) into v_moved from spend_authorizations a
        where a.user_id = p_user_id and a.app_id = p_app_id and a.window_start = p_window_start and a.state = 'PENDING'
          and a.expires_at > least(v_through, p_now) and a.expires_at <= greatest(v_through, p_now);
        if p_now > v_through then
          v_held := v_held - v_moved;
          if v_moved <> 0 then
            update spend_usage set held_nanos = v_held, held_through = p_now
            where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start;
          end if;
        else
          v_held := v_held + v_moved;
        end if;
        return query select v_spent::text, v_held::text;
      end
      $$`.execute(db);
  },
});

// Every spend is in the fund policy's currency: a decision stores the currency it read under the
// policy's shared lock, and a currency change (under the exclusive one) is refused while any spend
// exists. So the CURRENCY_IN_USE check asks whether any spend exists at all, the first row of the
// table, and this index (one B-tree more for every decision to write) serves nothing. An instance of the earlier release
// asking it during a currency change reads spend_authorizations until its first spend (every one is
// in the old currency), then stops.
const m0017: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.dropIndex("spend_authorizations_by_currency").execute();
  },
};

// Issue 15: a window is its start and its end. Usage rows, and the held index and the triggers that
// find a window's holds, were keyed by the window's start alone, so windows of two periods that start
// at the same instant (monthly and quarterly on 1 October, after a limit's period changed) shared one
// row: the new window's usage held the old one's spends, against the contract ("a spend counts in
// the window it was authorized in"). Each window's row is rebuilt from its authorizations: spent is
// what they captured less what was reversed, held the pending holds expiring after the row's
// `held_through` (0016's invariant). On PostgreSQL an instance of the earlier release keeps
// deciding: the functions it calls keep their signatures and take the whole key, but for the
// earlier overloads of spend_settle and spend_record_change, which stay and add a capture or a
// reversal to every window of its start (right but where two windows share one). On SQLite its
// window lock's upsert names the old key and fails: stop it before this release opens the file.
/** The held counter's triggers on spend_authorizations go (SQLite writes a renamed table's new name into the triggers that write it: they go first). */
async function dropHeldTriggers(db: Kysely<any>, dialect: "sqlite" | "postgres"): Promise<void> {
  await sql`drop trigger spend_held_created${sql.raw(dialect === "postgres" ? " on spend_authorizations" : "")}`.execute(db);
  await sql`drop trigger spend_held_left${sql.raw(dialect === "postgres" ? " on spend_authorizations" : "")}`.execute(db);
}

/** The usage table, its primary key in `key`'s order. */
async function createUsageTable(db: Kysely<any>, text: TextType, dialect: "sqlite" | "postgres", key: Array<"user_id" | "app_id" | "window_start" | "window_end">): Promise<void> {
  const table = db.schema
    .createTable("spend_usage")
    .addColumn("user_id", text, (c) => c.notNull())
    .addColumn("app_id", text, (c) => c.notNull())
    .addColumn("window_start", text, (c) => c.notNull())
    .addColumn("window_end", text, (c) => c.notNull())
    .addColumn("spent_nanos", "bigint", (c) => c.notNull())
    .addColumn("held_nanos", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("held_through", text, (c) => c.notNull().defaultTo(""))
    .addPrimaryKeyConstraint("spend_usage_pk", key);
  await (dialect === "sqlite" ? table.modifyEnd(sql`without rowid`) : table).execute();
}

/** 0018's held index and SQLite's held counter triggers: a window's holds by its start and end. */
async function holdsByWindowKey(db: Kysely<any>, dialect: "sqlite" | "postgres"): Promise<void> {
  await sql`create index spend_authorizations_held on spend_authorizations (user_id, app_id, window_start, window_end, expires_at, amount_nanos) where state = 'PENDING'`.execute(db);
  if (dialect === "sqlite") await sqliteHeldTriggers(db, windowKeyRows);
}

/** The usage rows a held counter's trigger changes for the authorization `row`, by its window's start and end (0018). */
const windowKeyRows = (row: "new" | "old") =>
  sql.raw(`user_id = ${row}.user_id and app_id = ${row}.app_id and window_start = ${row}.window_start and window_end = ${row}.window_end and held_through < ${row}.expires_at`);

/** SQLite's held counter: a hold adds to, and its end takes from, the usage rows `rows` names. */
async function sqliteHeldTriggers(db: Kysely<any>, rows: (row: "new" | "old") => RawBuilder<unknown>): Promise<void> {
  await sql`
    create trigger spend_held_created after insert on spend_authorizations when new.state = 'PENDING'
    begin
      update spend_usage set held_nanos = held_nanos + new.amount_nanos where ${rows("new")};
    end`.execute(db);
  await sql`
    create trigger spend_held_left after update of state on spend_authorizations when old.state = 'PENDING' and new.state <> 'PENDING'
    begin
      update spend_usage set held_nanos = held_nanos - old.amount_nanos where ${rows("old")};
    end`.execute(db);
}

const m0018 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    await dropHeldTriggers(db, dialect);
    await sql`alter table spend_usage rename to spend_usage_0017`.execute(db);
    if (dialect === "postgres") await sql`alter table spend_usage_0017 rename constraint spend_usage_pk to spend_usage_0017_pk`.execute(db);
    await createUsageTable(db, text, dialect, ["user_id", "app_id", "window_start", "window_end"]);
    await sql`
      insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
      select a.user_id, a.app_id, a.window_start, a.window_end,
        sum(a.captured_nanos - a.reversed_nanos),
        sum(case when a.state = 'PENDING' and a.expires_at > coalesce(u.held_through, '') then a.amount_nanos else 0 end),
        coalesce(max(u.held_through), '')
      from spend_authorizations a
      left join spend_usage_0017 u on u.user_id = a.user_id and u.app_id = a.app_id and u.window_start = a.window_start
      group by a.user_id, a.app_id, a.window_start, a.window_end`.execute(db);
    // A row without an authorization (none is written so; kept all the same).
    await sql`
      insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
      select u.user_id, u.app_id, u.window_start, u.window_end, u.spent_nanos, u.held_nanos, u.held_through from spend_usage_0017 u
      where not exists (select 1 from spend_authorizations a where a.user_id = u.user_id and a.app_id = u.app_id and a.window_start = u.window_start)`.execute(db);
    await db.schema.dropTable("spend_usage_0017").execute();
    await db.schema.dropIndex("spend_authorizations_held").execute();
    await holdsByWindowKey(db, dialect);
    if (dialect === "sqlite") return;
    await sql`
      create or replace function spend_held_counter() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          update spend_usage set held_nanos = held_nanos + new.amount_nanos where ${windowKeyRows("new")};
        else
          update spend_usage set held_nanos = held_nanos - old.amount_nanos where ${windowKeyRows("old")};
        end if;
        return null;
      end
      $$`.execute(db);
    await sql`
      create trigger spend_held_created after insert on spend_authorizations
      for each row when (new.state = 'PENDING') execute function spend_held_counter()`.execute(db);
    await sql`
      create trigger spend_held_left after update of state on spend_authorizations
      for each row when (old.state = 'PENDING' and new.state <> 'PENDING') execute function spend_held_counter()`.execute(db);
    // 0016's spend_lock_window, each statement on the window's whole key.
    await sql`
      create or replace function spend_lock_window(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_now text)
      returns table (spent text, held text) language plpgsql volatile as $$
      declare
        v_spent bigint;
        v_held bigint;
        v_through text;
        v_moved bigint;
      begin
        insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
        values (p_user_id, p_app_id, p_window_start, p_window_end, 0, 0, p_now)
        on conflict (user_id, app_id, window_start, window_end) do update set held_through = spend_usage.held_through
        returning spent_nanos, held_nanos, held_through into v_spent, v_held, v_through;
        select coalesce(sum(a.amount_nanos), 0) into v_moved from spend_authorizations a
        where a.user_id = p_user_id and a.app_id = p_app_id and a.window_start = p_window_start and a.window_end = p_window_end
          and a.state = 'PENDING' and a.expires_at > least(v_through, p_now) and a.expires_at <= greatest(v_through, p_now);
        if p_now > v_through then
          v_held := v_held - v_moved;
          if v_moved <> 0 then
            update spend_usage set held_nanos = v_held, held_through = p_now
            where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start and window_end = p_window_end;
          end if;
        else
          v_held := v_held + v_moved;
        end if;
        return query select v_spent::text, v_held::text;
      end
      $$`.execute(db);
    await sql`
      create or replace function spend_lock_row(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_id text)
      returns table (id text, user_id text, app_id text, currency_code text, state text, expires_at text, window_start text, window_end text,
        decision text, metadata text, created_at text, updated_at text, amount text, captured text, reversed text)
      language plpgsql volatile as $$
      #variable_conflict use_column
      begin
        insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos)
        values (p_user_id, p_app_id, p_window_start, p_window_end, 0)
        on conflict (user_id, app_id, window_start, window_end) do update set held_through = spend_usage.held_through;
        return query
          select a.id, a.user_id, a.app_id, a.currency_code, a.state, a.expires_at, a.window_start, a.window_end,
            a.decision, a.metadata, a.created_at, a.updated_at, a.amount_nanos::text, a.captured_nanos::text, a.reversed_nanos::text
          from spend_authorizations a where a.id = p_id;
      end
      $$`.execute(db);
    // 0012's spend_settle, spend_record_authorization and spend_record_change on the window's whole key.
    await sql`
      create function spend_settle(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_spent_delta bigint,
        p_answer_id text, p_answer_owner text, p_answer text)
      returns boolean language plpgsql volatile as $$
      begin
        if p_spent_delta <> 0 then
          update spend_usage set spent_nanos = spent_nanos + p_spent_delta
          where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start and window_end = p_window_end;
        end if;
        if p_answer_id is null then
          return true;
        end if;
        update idempotency_records set answer = p_answer, locked_until = null where id = p_answer_id and owner = p_answer_owner;
        return found;
      end
      $$`.execute(db);
    await sql`
      create or replace function spend_record_authorization(
        p_id text, p_user_id text, p_app_id text, p_currency_code text, p_amount bigint, p_captured bigint,
        p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text, p_at text,
        p_entry_id text, p_entry_kind text, p_entry_amount bigint, p_entry_at text, p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
      returns boolean language plpgsql volatile as $$
      begin
        insert into spend_authorizations (id, user_id, app_id, currency_code, amount_nanos, captured_nanos, reversed_nanos, state,
          expires_at, window_start, window_end, decision, metadata, created_at, updated_at)
        values (p_id, p_user_id, p_app_id, p_currency_code, p_amount, p_captured, 0, p_state,
          p_expires_at, p_window_start, p_window_end, p_decision, p_metadata, p_at, p_at);
        if p_entry_id is not null then
          insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
          values (p_entry_id, p_id, p_user_id, p_app_id, p_window_start, p_entry_kind, p_entry_amount, p_entry_at);
        end if;
        return spend_settle(p_user_id, p_app_id, p_window_start, p_window_end, p_spent_delta, p_answer_id, p_answer_owner, p_answer);
      end
      $$`.execute(db);
    await sql`
      create function spend_record_change(
        p_id text, p_state text, p_captured bigint, p_reversed bigint, p_at text, p_user_id text, p_app_id text, p_window_start text, p_window_end text,
        p_first_id text, p_first_kind text, p_first_amount bigint, p_second_id text, p_second_kind text, p_second_amount bigint,
        p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
      returns boolean language plpgsql volatile as $$
      begin
        update spend_authorizations set state = p_state, captured_nanos = p_captured, reversed_nanos = p_reversed, updated_at = p_at where id = p_id;
        insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
        values (p_first_id, p_id, p_user_id, p_app_id, p_window_start, p_first_kind, p_first_amount, p_at);
        if p_second_id is not null then
          insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
          values (p_second_id, p_id, p_user_id, p_app_id, p_window_start, p_second_kind, p_second_amount, p_at);
        end if;
        return spend_settle(p_user_id, p_app_id, p_window_start, p_window_end, p_spent_delta, p_answer_id, p_answer_owner, p_answer);
      end
      $$`.execute(db);
  },
});

// A window's usage is every spend whose authorization instant lies inside it, whatever period or
// time zone was in force when the spend was made: a period or zone change never resets or hides
// money spent or held. Until now a usage row counted only the spends decided in it, so a new
// period's or zone's window started from nothing. Invariant from here: every usage row counts every
// authorization of its subject and app whose `created_at` lies in [window_start, window_end).
// - A row is seeded when it is created: spent is what the authorizations made in its range captured
//   less what was reversed, held their pending holds expiring after its `held_through` (its creation
//   instant). Authorization ids are time-ordered, so the range is one of spend_authorizations_by_user_app.
// - Every later change changes every row whose window holds the authorization's instant: the held
//   triggers and spend_add_spent. The primary key leads with window_end so that those rows (the
//   windows ending after the instant: for a recent one, the current windows) are one range of it.
// - Every writer of a subject-app's spends first takes its advisory lock (spend_lock_subject_app),
//   so a row is never seeded while a change it would miss is in flight (on SQLite the database's
//   write lock does that). The window's row is no longer the lock: a decision reads it, it does not
//   rewrite it to lock it.
// Every usage row is dropped and is seeded again when next needed, from the authorizations, which
// are the record. PostgreSQL functions keep their signatures, so an instance of the earlier release
// calls these ones during a rolling upgrade; on SQLite, stop it before this release opens the file.
const m0019 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  ...(dialect === "sqlite" ? { down: (db: Kysely<any>) => usageByWindowKeyAgain(db, text) } : {}),
  async up(db: Kysely<any>) {
    await dropHeldTriggers(db, dialect);
    await db.schema.dropTable("spend_usage").execute();
    await createUsageTable(db, text, dialect, ["user_id", "app_id", "window_end", "window_start"]);
    // A window's holds by instant: the pending holds of a subject and app expiring in a range, their instants and amounts in the index.
    await db.schema.dropIndex("spend_authorizations_held").execute();
    await sql`create index spend_authorizations_held on spend_authorizations (user_id, app_id, expires_at, created_at, amount_nanos) where state = 'PENDING'`.execute(db);
    const holding = (row: "new" | "old") =>
      sql.raw(`user_id = ${row}.user_id and app_id = ${row}.app_id and window_end > ${row}.created_at and window_start <= ${row}.created_at and held_through < ${row}.expires_at`);
    if (dialect === "sqlite") return sqliteHeldTriggers(db, holding);
    await sql`
      create or replace function spend_held_counter() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          update spend_usage set held_nanos = held_nanos + new.amount_nanos where ${holding("new")};
        else
          update spend_usage set held_nanos = held_nanos - old.amount_nanos where ${holding("old")};
        end if;
        return null;
      end
      $$`.execute(db);
    await sql`
      create trigger spend_held_created after insert on spend_authorizations
      for each row when (new.state = 'PENDING') execute function spend_held_counter()`.execute(db);
    await sql`
      create trigger spend_held_left after update of state on spend_authorizations
      for each row when (old.state = 'PENDING' and new.state <> 'PENDING') execute function spend_held_counter()`.execute(db);
    // The first 8 characters of every time-ordered id made at instant p_at (src/core/ids.ts timeOrderedPrefix).
    await sql`
      create function spend_id_prefix(p_at text) returns text language plpgsql stable as $$
      declare
        v_rest bigint := floor(extract(epoch from p_at::timestamptz) * 1000);
        v_out text := '';
      begin
        for i in 1..8 loop
          v_out := substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', (v_rest % 62)::int + 1, 1) || v_out;
          v_rest := v_rest / 62;
        end loop;
        return v_out;
      end
      $$`.execute(db);
    // A row is seeded by whoever inserts it, here rather than by the insert: a statement of the
    // release before that was waiting for this migration's locks when it committed (its function's
    // body as it was when it was called) inserts a window's row as that release did, with nothing
    // spent, into this table, and decides on what it returns.
    await sql`
      create function spend_usage_seeded() returns trigger language plpgsql as $$
      begin
        select coalesce(sum(a.captured_nanos - a.reversed_nanos), 0),
          coalesce(sum(a.amount_nanos) filter (where a.state = 'PENDING' and a.expires_at > new.held_through), 0)
        into new.spent_nanos, new.held_nanos
        from spend_authorizations a
        where a.user_id = new.user_id and a.app_id = new.app_id and a.id >= spend_id_prefix(new.window_start) and a.id < spend_id_prefix(new.window_end);
        return new;
      end
      $$`.execute(db);
    await sql`create trigger spend_usage_seeded before insert on spend_usage for each row execute function spend_usage_seeded()`.execute(db);
    await sql`
      create function spend_lock_subject_app(p_user_id text, p_app_id text) returns void language sql volatile as $$
        select pg_advisory_xact_lock(hashtextextended('spend_usage:' || p_user_id || ':' || p_app_id, 0))
      $$`.execute(db);
    await sql`
      create function spend_add_spent(p_user_id text, p_app_id text, p_at text, p_delta bigint) returns void language plpgsql volatile as $$
      begin
        if p_delta <> 0 then
          update spend_usage set spent_nanos = spent_nanos + p_delta
          where user_id = p_user_id and app_id = p_app_id and window_end > p_at and window_start <= p_at;
        end if;
      end
      $$`.execute(db);
    // The lock, then the window's row (seeded when it has none), the sweep and the held amount at
    // p_now, each statement with its own snapshot (see 0009).
    await sql`
      create or replace function spend_lock_window(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_now text)
      returns table (spent text, held text) language plpgsql volatile as $$
      declare
        v_spent bigint;
        v_held bigint;
        v_through text;
        v_moved bigint;
      begin
        perform spend_lock_subject_app(p_user_id, p_app_id);
        select u.spent_nanos, u.held_nanos, u.held_through into v_spent, v_held, v_through from spend_usage u
        where u.user_id = p_user_id and u.app_id = p_app_id and u.window_start = p_window_start and u.window_end = p_window_end;
        if not found then
          insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
          values (p_user_id, p_app_id, p_window_start, p_window_end, 0, 0, p_now)
          on conflict do nothing
          returning spent_nanos, held_nanos into v_spent, v_held;
          if found then
            return query select v_spent::text, v_held::text;
            return;
          end if;
          -- Inserted meanwhile by a statement of the release before, which takes no subject-app lock.
          select u.spent_nanos, u.held_nanos, u.held_through into v_spent, v_held, v_through from spend_usage u
          where u.user_id = p_user_id and u.app_id = p_app_id and u.window_start = p_window_start and u.window_end = p_window_end;
        end if;
        select coalesce(sum(a.amount_nanos), 0) into v_moved from spend_authorizations a
        where a.user_id = p_user_id and a.app_id = p_app_id and a.state = 'PENDING'
          and a.expires_at > least(v_through, p_now) and a.expires_at <= greatest(v_through, p_now)
          and a.created_at >= p_window_start and a.created_at < p_window_end;
        if p_now > v_through then
          v_held := v_held - v_moved;
          if v_moved <> 0 then
            update spend_usage set held_nanos = v_held, held_through = p_now
            where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start and window_end = p_window_end;
          end if;
        else
          v_held := v_held + v_moved;
        end if;
        return query select v_spent::text, v_held::text;
      end
      $$`.execute(db);
    // A change's first round trip: the lock, then the authorization as it is after it.
    await sql`
      create or replace function spend_lock_row(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_id text)
      returns table (id text, user_id text, app_id text, currency_code text, state text, expires_at text, window_start text, window_end text,
        decision text, metadata text, created_at text, updated_at text, amount text, captured text, reversed text)
      language plpgsql volatile as $$
      #variable_conflict use_column
      begin
        perform spend_lock_subject_app(p_user_id, p_app_id);
        return query
          select a.id, a.user_id, a.app_id, a.currency_code, a.state, a.expires_at, a.window_start, a.window_end,
            a.decision, a.metadata, a.created_at, a.updated_at, a.amount_nanos::text, a.captured_nanos::text, a.reversed_nanos::text
          from spend_authorizations a where a.id = p_id;
      end
      $$`.execute(db);
    // The record functions add the spent delta to every window holding the authorization's instant;
    // spend_settle keeps only the kept answer's update (a delta of 0), for an instance of an earlier release.
    await sql`
      create or replace function spend_record_authorization(
        p_id text, p_user_id text, p_app_id text, p_currency_code text, p_amount bigint, p_captured bigint,
        p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text, p_at text,
        p_entry_id text, p_entry_kind text, p_entry_amount bigint, p_entry_at text, p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
      returns boolean language plpgsql volatile as $$
      begin
        insert into spend_authorizations (id, user_id, app_id, currency_code, amount_nanos, captured_nanos, reversed_nanos, state,
          expires_at, window_start, window_end, decision, metadata, created_at, updated_at)
        values (p_id, p_user_id, p_app_id, p_currency_code, p_amount, p_captured, 0, p_state,
          p_expires_at, p_window_start, p_window_end, p_decision, p_metadata, p_at, p_at);
        if p_entry_id is not null then
          insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
          values (p_entry_id, p_id, p_user_id, p_app_id, p_window_start, p_entry_kind, p_entry_amount, p_entry_at);
        end if;
        perform spend_add_spent(p_user_id, p_app_id, p_at, p_spent_delta);
        return spend_settle(p_user_id, p_app_id, p_window_start, 0::bigint, p_answer_id, p_answer_owner, p_answer);
      end
      $$`.execute(db);
    for (const windowEnd of [true, false]) {
      // The change of the release before 0018 named the window by its start alone; both take the authorization's instant now.
      const param = windowEnd ? sql.raw("p_window_end text, ") : sql.raw("");
      await sql`
        create or replace function spend_record_change(
          p_id text, p_state text, p_captured bigint, p_reversed bigint, p_at text, p_user_id text, p_app_id text, p_window_start text, ${param}
          p_first_id text, p_first_kind text, p_first_amount bigint, p_second_id text, p_second_kind text, p_second_amount bigint,
          p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
        returns boolean language plpgsql volatile as $$
        declare
          v_made text;
        begin
          update spend_authorizations set state = p_state, captured_nanos = p_captured, reversed_nanos = p_reversed, updated_at = p_at
          where id = p_id returning created_at into v_made;
          insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
          values (p_first_id, p_id, p_user_id, p_app_id, p_window_start, p_first_kind, p_first_amount, p_at);
          if p_second_id is not null then
            insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
            values (p_second_id, p_id, p_user_id, p_app_id, p_window_start, p_second_kind, p_second_amount, p_at);
          end if;
          perform spend_add_spent(p_user_id, p_app_id, v_made, p_spent_delta);
          return spend_settle(p_user_id, p_app_id, p_window_start, 0::bigint, p_answer_id, p_answer_owner, p_answer);
        end
        $$`.execute(db);
    }
  },
});

/**
 * 0019 undone on SQLite, for a rollback to the release before it (src/storage/migrate-down.ts),
 * which does not run on its table: 0018's table, index and triggers again, each window's row
 * rebuilt from its authorizations as 0018 did, every pending hold counted (held_through '') until
 * the window's first sweep (0016).
 */
async function usageByWindowKeyAgain(db: Kysely<any>, text: TextType): Promise<void> {
  await dropHeldTriggers(db, "sqlite");
  await db.schema.dropTable("spend_usage").execute();
  await db.schema.dropIndex("spend_authorizations_held").execute();
  await createUsageTable(db, text, "sqlite", ["user_id", "app_id", "window_start", "window_end"]);
  await sql`
    insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
    select user_id, app_id, window_start, window_end, sum(captured_nanos - reversed_nanos), sum(case when state = 'PENDING' then amount_nanos else 0 end), ''
    from spend_authorizations group by user_id, app_id, window_start, window_end`.execute(db);
  await holdsByWindowKey(db, "sqlite");
}

// Bounded storage of executions (src/automations/execution-retention.ts): the finished ones by when
// they finished, for the sweep by age (one range, oldest first), and by automation newest first, for
// the sweep by count (the newest N of an automation read from the index alone). Partial: a pending
// or running execution is in neither, so the intake's insert writes no entry; the final save writes
// both. `if not exists`: on a large table an operator may build them first without blocking writes
// (PostgreSQL's CREATE INDEX CONCURRENTLY, docs/operating.md "Upgrading"), and the migration then finds them.
const m0020: Migration = {
  async up(db: Kysely<any>) {
    await sql`create index if not exists automation_executions_finished on automation_executions (completed_at) where completed_at is not null`.execute(db);
    await sql`create index if not exists automation_executions_finished_by_automation on automation_executions (automation_id, created_at, id) where completed_at is not null`.execute(db);
  },
};

/** The trace context of the request that accepted an event, kept with the execution it starts, for the run's span to continue. */
const m0021 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("automation_executions").addColumn("trace_parent", text).execute();
  },
});

/**
 * Fund events as automation triggers (src/automations/fund-triggers.ts): an automation's fund-event
 * trigger, kept on the automation and watched by every instance through its change version; how
 * deep in a chain of fund events an execution is; and the usage thresholds fired, one row per
 * automation, subject, app, window and threshold (the primary key is what makes a threshold fire
 * once, whichever instance's decision crosses it first), swept by window end.
 */
const m0022 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("automations").addColumn("fund_trigger", text).execute();
    await db.schema.alterTable("automation_executions").addColumn("depth", "integer", (c) => c.notNull().defaultTo(0)).execute();
    await db.schema
      .createTable("fund_threshold_firings")
      .addColumn("automation_id", text, (c) => c.notNull())
      .addColumn("user_id", text, (c) => c.notNull())
      .addColumn("app_id", text, (c) => c.notNull())
      .addColumn("window_start", text, (c) => c.notNull())
      .addColumn("window_end", text, (c) => c.notNull())
      .addColumn("percent", "integer", (c) => c.notNull())
      .addColumn("fired_at", text, (c) => c.notNull())
      .addPrimaryKeyConstraint("fund_threshold_firings_pk", ["automation_id", "user_id", "app_id", "window_start", "window_end", "percent"])
      .execute();
    await db.schema.createIndex("fund_threshold_firings_by_window_end").on("fund_threshold_firings").columns(["window_end"]).execute();
    await db.insertInto("change_versions").values({ name: "fund_triggers", version: 0 }).execute();
  },
});

// Executions run again (src/automations/reruns.ts): what started each (null: its automation's
// trigger, so that the rows every writer inserts without naming it stay right) and the failed one a
// redrive runs again. The indexes are partial, so that the intake's inserts, which set neither
// column, write no entry: the unique one makes a failed execution redriven at most once and answers
// `redrivenBy`; the other finds an event's live replays.
const m0023 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("automation_executions").addColumn("origin", text).execute();
    await db.schema.alterTable("automation_executions").addColumn("redrive_of", text).execute();
    await sql`create unique index if not exists automation_executions_redrive_of on automation_executions (redrive_of) where redrive_of is not null`.execute(db);
    await sql`create index if not exists automation_executions_replays on automation_executions (automation_id, event_id) where origin = 'AUTOMATION_EXECUTION_ORIGIN_REPLAY'`.execute(db);
  },
});

/**
 * The audit trail (src/audit/). Every list reads it newest first by id (time-ordered), under one of
 * three filters an index serves: a target's history, a target user's rows (a user reading their
 * own limits' history), and an actor's changes. Append-only: a trigger refuses every UPDATE.
 */
/** The columns of an audit event, in the order of audit_events and of the SQLite inbox (0027) alike. */
async function createAuditTable(db: Kysely<any>, text: TextType, name: string): Promise<void> {
  let table = db.schema.createTable(name).addColumn("id", text, (c) => c.primaryKey());
  for (const column of ["operation_id", "target_kind", "target_id", "target_user_id", "target_app_id", "actor_kind", "actor_user_id", "actor_credential_id", "actor_automation_id", "actor_execution_id", "actor_event_id", "request_id"]) {
    table = table.addColumn(column, text, (c) => c.notNull());
  }
  await table.addColumn("before_state", text).addColumn("after_state", text).addColumn("created_at", text, (c) => c.notNull()).execute();
}

const m0025 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    await createAuditTable(db, text, "audit_events");
    await db.schema.createIndex("audit_events_by_target").on("audit_events").columns(["target_kind", "target_id", "id"]).execute();
    await db.schema.createIndex("audit_events_by_target_user").on("audit_events").columns(["target_user_id", "id"]).execute();
    await db.schema.createIndex("audit_events_by_actor").on("audit_events").columns(["actor_user_id", "id"]).execute();
    if (dialect === "sqlite") {
      await sql`create trigger audit_events_append_only before update on audit_events begin select raise(abort, 'audit events are append-only'); end`.execute(db);
    } else {
      await sql`create function audit_events_append_only() returns trigger language plpgsql as $$ begin raise exception 'audit events are append-only'; end $$`.execute(db);
      await sql`create trigger audit_events_append_only before update on audit_events for each row execute function audit_events_append_only()`.execute(db);
    }
  },
});

/**
 * The audit trail's other filters, each served by an index of its own rather than a walk of the
 * whole trail newest first: an operation's events, an execution's changes, an app's targets.
 */
const m0026: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex("audit_events_by_operation").on("audit_events").columns(["operation_id", "id"]).execute();
    await db.schema.createIndex("audit_events_by_execution").on("audit_events").columns(["actor_execution_id", "id"]).execute();
    await db.schema.createIndex("audit_events_by_app").on("audit_events").columns(["target_app_id", "id"]).execute();
  },
};

/**
 * The audit inbox, where every change records its event (src/audit/audit-record.ts).
 * - SQLite: a table. An event is an append to its two B-trees, in the change's transaction; the
 *   server moves the inbox into audit_events, with its six filter indexes, in batches
 *   (src/audit/audit-inbox.ts), so that an index page a batch touches is written once for the batch
 *   rather than once per commit. Lists read both. Append-only as the trail is: rows leave it only by
 *   the move, which inserts them into audit_events in the same transaction.
 * - PostgreSQL: a view of audit_events that inserts write through, straight into the trail (an
 *   index costs little there next to a change's round trips: bench scenario 13).
 */
const m0027 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect === "postgres") {
      await sql`create view audit_inbox as select * from audit_events`.execute(db);
      return;
    }
    await createAuditTable(db, text, "audit_inbox");
    await sql`create trigger audit_inbox_append_only before update on audit_inbox begin select raise(abort, 'audit events are append-only'); end`.execute(db);
  },
});

/**
 * The signing secrets of automations' `notify` steps (src/automations/notification-secrets.ts), sealed
 * with SECRETS_KEY and bound to their automation: the current one (expires_at null) and the one a
 * rotation replaced, which keeps signing beside it until expires_at.
 */
const m0024 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable("notification_secrets")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("automation_id", text, (c) => c.notNull())
      .addColumn("sealed", text, (c) => c.notNull())
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("expires_at", text)
      .execute();
    await db.schema.createIndex("notification_secrets_by_automation").on("notification_secrets").columns(["automation_id", "created_at"]).execute();
  },
});

// PostgreSQL only: an Authorize, Capture, Release or Reverse in one round trip, a transaction by
// itself in autocommit (src/funds/spends/spend-writes.ts). The server decides on what it read without a
// lock (the authorization's row for a change; the kept policy, the layers and the window's usage for
// a decision) and sends the whole decision as one call, which takes the locks and checks that what
// was decided on is still so; else it answers why ('stale'; 'policy' or 'usage', with the usage as
// it is) with nothing written, and the server decides again. Then the kept answer's insert (else
// 'taken': another attempt holds the key, nothing written; IdempotencyRecords' keepInsert, the same
// upsert), then the writes of spend_record_authorization or spend_record_change.
// In autocommit the call never waits for a lock: held by another, it answers 'busy' with nothing
// written, and the server makes the same call with p_wait in a transaction, which waits (BEGIN and
// the call in one round trip, then COMMIT). A statement that waited in autocommit would commit once
// it got the lock even if its connection was lost meanwhile (PostgreSQL learns of that only when it
// answers, after the commit): a decision answered 503 would have been kept. A transaction whose
// connection is lost never commits.
const m0028 = (dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== "postgres") return;
    // spend_lock_subject_app's lock if it is free at once.
    await sql`
      create function spend_try_lock_subject_app(p_user_id text, p_app_id text) returns boolean language sql volatile as $$
        select pg_try_advisory_xact_lock(hashtextextended('spend_usage:' || p_user_id || ':' || p_app_id, 0))
      $$`.execute(db);
    // True when the answer is kept (or there is none to keep).
    await sql`
      create function spend_keep_answer(p_id text, p_fingerprint text, p_owner text, p_answer text, p_created_at text, p_retained text)
      returns boolean language plpgsql volatile as $$
      begin
        if p_id is null then
          return true;
        end if;
        insert into idempotency_records as r (id, fingerprint, owner, locked_until, answer, created_at)
        values (p_id, p_fingerprint, p_owner, null, p_answer, p_created_at)
        on conflict (id) do update set fingerprint = excluded.fingerprint, owner = excluded.owner, locked_until = null,
          answer = excluded.answer, created_at = excluded.created_at
        where r.created_at <= p_retained or (r.answer is null and r.locked_until <= p_created_at);
        return found;
      end
      $$`.execute(db);
    // A decision: the policy's lock shared and the check that the policy is the row decided on; the
    // window's lock and usage (spend_lock_window, its sweep included, its row seeded when it has
    // none) and the check that it is the usage decided on; the answer; the authorization.
    await sql`
      create function spend_authorize(
        p_lock text, p_tenant_id text, p_currency_code text, p_time_zone text, p_default_controls text, p_policy_updated_at text,
        p_spent bigint, p_held bigint, p_now text,
        p_id text, p_user_id text, p_app_id text, p_amount bigint, p_captured bigint,
        p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text,
        p_entry_id text, p_entry_kind text, p_entry_amount bigint,
        p_kept_id text, p_kept_fingerprint text, p_kept_owner text, p_kept_answer text, p_kept_created_at text, p_kept_retained text,
        p_wait boolean)
      returns table (outcome text, spent text, held text) language plpgsql volatile as $$
      declare
        v_spent bigint;
        v_held bigint;
      begin
        if p_wait then
          perform pg_advisory_xact_lock_shared(hashtextextended(p_lock, 0));
        elsif not pg_try_advisory_xact_lock_shared(hashtextextended(p_lock, 0)) then
          return query select 'busy', null::text, null::text;
          return;
        end if;
        perform 1 from fund_policy p where p.tenant_id = p_tenant_id and p.currency_code = p_currency_code and p.time_zone = p_time_zone
          and p.default_controls is not distinct from p_default_controls and p.updated_at is not distinct from p_policy_updated_at;
        if not found then
          return query select 'policy', null::text, null::text;
          return;
        end if;
        -- Held now, it is held again (at once) by spend_lock_window.
        if p_wait then
          perform spend_lock_subject_app(p_user_id, p_app_id);
        elsif not spend_try_lock_subject_app(p_user_id, p_app_id) then
          return query select 'busy', null::text, null::text;
          return;
        end if;
        select w.spent::bigint, w.held::bigint into v_spent, v_held from spend_lock_window(p_user_id, p_app_id, p_window_start, p_window_end, p_now) w;
        if v_spent <> p_spent or v_held <> p_held then
          return query select 'usage', v_spent::text, v_held::text;
          return;
        end if;
        if not spend_keep_answer(p_kept_id, p_kept_fingerprint, p_kept_owner, p_kept_answer, p_kept_created_at, p_kept_retained) then
          return query select 'taken', null::text, null::text;
          return;
        end if;
        perform spend_record_authorization(p_id, p_user_id, p_app_id, p_currency_code, p_amount, p_captured, p_state, p_expires_at,
          p_window_start, p_window_end, p_decision, p_metadata, p_now, p_entry_id, p_entry_kind, p_entry_amount, p_now, p_captured, null, null, null);
        return query select 'recorded', null::text, null::text;
      end
      $$`.execute(db);
    await sql`
      create function spend_change(
        p_id text, p_user_id text, p_app_id text, p_window_start text, p_window_end text,
        p_was_state text, p_was_captured bigint, p_was_reversed bigint,
        p_state text, p_captured bigint, p_reversed bigint, p_at text,
        p_first_id text, p_first_kind text, p_first_amount bigint, p_second_id text, p_second_kind text, p_second_amount bigint, p_spent_delta bigint,
        p_kept_id text, p_kept_fingerprint text, p_kept_owner text, p_kept_answer text, p_kept_created_at text, p_kept_retained text,
        p_wait boolean)
      returns text language plpgsql volatile as $$
      begin
        if p_wait then
          perform spend_lock_subject_app(p_user_id, p_app_id);
        elsif not spend_try_lock_subject_app(p_user_id, p_app_id) then
          return 'busy';
        end if;
        perform 1 from spend_authorizations a
        where a.id = p_id and a.state = p_was_state and a.captured_nanos = p_was_captured and a.reversed_nanos = p_was_reversed;
        if not found then
          return 'stale';
        end if;
        if not spend_keep_answer(p_kept_id, p_kept_fingerprint, p_kept_owner, p_kept_answer, p_kept_created_at, p_kept_retained) then
          return 'taken';
        end if;
        perform spend_record_change(p_id, p_state, p_captured, p_reversed, p_at, p_user_id, p_app_id, p_window_start, p_window_end,
          p_first_id, p_first_kind, p_first_amount, p_second_id, p_second_kind, p_second_amount, p_spent_delta, null, null, null);
        return 'changed';
      end
      $$`.execute(db);
  },
});

// Two foreign keys every decision paid for (about 10 µs each per decision on PostgreSQL) that guard
// nothing a writer can break: users are never deleted, and every decision reads its user's row in
// the read it decides on (404 USER_NOT_FOUND); a ledger entry is written only by the functions that
// insert or lock its authorization in the same transaction. SQLite keeps them: dropping a foreign
// key there rebuilds the table, and its check is one probe of a B-tree the insert already holds.
const m0029 = (dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== "postgres") return;
    await sql`alter table spend_authorizations drop constraint spend_authorizations_user_id_fkey`.execute(db);
    await sql`alter table spend_ledger drop constraint spend_ledger_authorization_id_fkey`.execute(db);
  },
});

// A decision on the layers this process last saw for the subject and app, in one round trip instead
// of two (the read of the layers and the usage, then the call): 0028's spend_authorize with the
// layers decided on, which, with p_check_layers, it checks after the policy's: the live subject-app
// row's and app cap's controls as they are now ('layers' when either changed, and nothing written).
// 0028's signature stays for an instance of the release before.
const m0030 = (dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== "postgres") return;
    await sql`
      create function spend_authorize(
        p_lock text, p_tenant_id text, p_currency_code text, p_time_zone text, p_default_controls text, p_policy_updated_at text,
        p_spent bigint, p_held bigint, p_now text,
        p_id text, p_user_id text, p_app_id text, p_amount bigint, p_captured bigint,
        p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text,
        p_entry_id text, p_entry_kind text, p_entry_amount bigint,
        p_kept_id text, p_kept_fingerprint text, p_kept_owner text, p_kept_answer text, p_kept_created_at text, p_kept_retained text,
        p_wait boolean, p_check_layers boolean, p_row_controls text, p_cap_controls text)
      returns table (outcome text, spent text, held text) language plpgsql volatile as $$
      declare
        v_spent bigint;
        v_held bigint;
      begin
        if p_wait then
          perform pg_advisory_xact_lock_shared(hashtextextended(p_lock, 0));
        elsif not pg_try_advisory_xact_lock_shared(hashtextextended(p_lock, 0)) then
          return query select 'busy', null::text, null::text;
          return;
        end if;
        perform 1 from fund_policy p where p.tenant_id = p_tenant_id and p.currency_code = p_currency_code and p.time_zone = p_time_zone
          and p.default_controls is not distinct from p_default_controls and p.updated_at is not distinct from p_policy_updated_at;
        if not found then
          return query select 'policy', null::text, null::text;
          return;
        end if;
        if p_check_layers then
          perform 1 where (select l.controls from subject_app_limits l where l.user_id = p_user_id and l.app_id = p_app_id and l.deleted_at is null) is not distinct from p_row_controls
            and (select c.controls from app_caps c where c.app_id = p_app_id and c.deleted_at is null) is not distinct from p_cap_controls;
          if not found then
            return query select 'layers', null::text, null::text;
            return;
          end if;
        end if;
        if p_wait then
          perform spend_lock_subject_app(p_user_id, p_app_id);
        elsif not spend_try_lock_subject_app(p_user_id, p_app_id) then
          return query select 'busy', null::text, null::text;
          return;
        end if;
        select w.spent::bigint, w.held::bigint into v_spent, v_held from spend_lock_window(p_user_id, p_app_id, p_window_start, p_window_end, p_now) w;
        if v_spent <> p_spent or v_held <> p_held then
          return query select 'usage', v_spent::text, v_held::text;
          return;
        end if;
        if not spend_keep_answer(p_kept_id, p_kept_fingerprint, p_kept_owner, p_kept_answer, p_kept_created_at, p_kept_retained) then
          return query select 'taken', null::text, null::text;
          return;
        end if;
        perform spend_record_authorization(p_id, p_user_id, p_app_id, p_currency_code, p_amount, p_captured, p_state, p_expires_at,
          p_window_start, p_window_end, p_decision, p_metadata, p_now, p_entry_id, p_entry_kind, p_entry_amount, p_now, p_captured, null, null, null);
        return query select 'recorded', null::text, null::text;
      end
      $$`.execute(db);
  },
});

/** Whether an instance of the release before the one that adds a migration keeps working on a database it was applied to. */
interface EarlierRelease {
  sqlite: boolean;
  postgres: boolean;
}
const RUNS: EarlierRelease = { sqlite: true, postgres: true };
const STOPS: EarlierRelease = { sqlite: false, postgres: false };
const RUNS_ON_POSTGRES: EarlierRelease = { sqlite: false, postgres: true };

export interface MigrationStep {
  name: string;
  migration: Migration;
  /** An instance of the release before the one that adds it keeps working on a database it was applied to, on this dialect. */
  earlierReleaseRuns: boolean;
  /**
   * PostgreSQL: every table that existed before it and that it locks in a mode other than ACCESS
   * SHARE, locked ACCESS EXCLUSIVE before its work (./migration-transaction.ts), so that it never
   * waits for a lock while holding one; test/storage/migration-locks.test.ts holds the list to what
   * the migration takes.
   */
  locks: readonly string[];
}

/**
 * Every migration of this release, in order, for `dialect`. What the earlier release does on a
 * database each was applied to:
 * - 0001-0003, 0005-0015: new tables, columns with defaults, indexes, rows and functions it does not
 *   know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it
 *   does not bump the change versions, so an instance of the later release sees its changes to
 *   credentials, the fund policy and listeners only once what it keeps of them is read anew.)
 * - 0004: drops automations.last_executed_at, which its webhook intake wrote: every delivery 500.
 * - 0016: its held sum reads the holds themselves; the counter's columns have defaults and the
 *   triggers keep them whoever writes the holds: it runs.
 * - 0017: its CURRENCY_IN_USE check reads spend_authorizations until its first row: it runs.
 * - 0018: on PostgreSQL it runs (the functions it calls keep their signatures, see the migration);
 *   on SQLite its window lock's upsert names the old key and fails: every decision 500.
 * - 0019: on PostgreSQL its decisions run in the functions, which seed a window's dropped usage row
 *   from the window's spends; its GetEffective reads the row itself and shows a window whose row was
 *   dropped as nothing spent or held until a decision in it (of either release) seeds the row. On
 *   SQLite its window lock makes a dropped row anew with nothing spent or held: it approves what the
 *   window's limit no longer allows.
 * - 0020: two indexes it does not know of, on finished executions (which it never deletes): it runs.
 * - 0021: a nullable column it does not know of; rows it inserts leave it null (their runs start
 *   traces of their own): it runs.
 * - 0022: a nullable column, a column with a default, a table and a change version it does not
 *   know of: it runs. The changes it makes record no fund events, and a save of an automation by
 *   it keeps the fund-event trigger it cannot see (it never names the column).
 * - 0023: two nullable columns and two partial indexes it does not know of; the rows it inserts
 *   leave both null (started by their trigger, which they are): it runs. It shows a redrive or a
 *   replay as any execution.
 * - 0024: a table it does not know of: it runs. (An automation saved with a `notify` step by the
 *   later release is a step kind it does not know: it cannot show or run that automation, which it
 *   could not have made; its other automations are unaffected.)
 * - 0025: a table it does not know of: it runs (its changes are not audited).
 * - 0026: indexes it does not know of: it runs.
 * - 0027: a table (SQLite) or a view (PostgreSQL) it does not know of: it runs, recording its
 *   changes into audit_events itself. On SQLite its lists do not show the events still in the
 *   inbox, which an instance of this release moves into audit_events within a second.
 * - 0028: functions it does not know of (PostgreSQL; nothing on SQLite): it runs.
 * - 0029: two foreign keys dropped (PostgreSQL; nothing on SQLite): it runs.
 * - 0030: a function it does not know of (PostgreSQL; nothing on SQLite): it runs.
 */
export function migrationSteps(dialect: "sqlite" | "postgres"): MigrationStep[] {
  const text: TextType = dialect === "postgres" ? sql`text collate "C"` : "text";
  const steps: Array<[string, Migration, EarlierRelease, (readonly string[])?]> = [
    ["0001_identity_and_funds", m0001(text), RUNS],
    ["0002_automations_and_webhooks", m0002(text), RUNS],
    ["0003_execution_queue_index", m0003, RUNS, ["automation_executions"]],
    ["0004_lighter_event_writes", m0004, STOPS, ["automation_executions", "automations"]],
    ["0005_token_failures", m0005(text), RUNS],
    ["0006_idempotency_records", m0006(text), RUNS],
    ["0007_instance_heartbeats", m0007(text), RUNS],
    ["0008_app_service_and_time_zone", m0008(text), RUNS, ["credentials", "fund_policy"]],
    ["0009_spend_authorizations", m0009(text, dialect), RUNS, ["users"]],
    ["0010_change_versions", m0010(text), RUNS],
    ["0011_fund_policy_version", m0011, RUNS, ["change_versions"]],
    ["0012_spend_round_trips", m0012(dialect), RUNS],
    ["0013_controls_row_write", m0013(dialect), RUNS],
    ["0014_controls_row_static", m0014(dialect), RUNS],
    ["0015_listeners_version", m0015, RUNS, ["change_versions"]],
    ["0016_spend_held_counter", m0016(text, dialect), RUNS, ["spend_authorizations", "spend_usage"]],
    ["0017_spends_currency_index_dropped", m0017, RUNS, ["spend_authorizations"]],
    ["0018_spend_windows_by_start_and_end", m0018(text, dialect), RUNS_ON_POSTGRES, ["spend_authorizations", "spend_usage"]],
    ["0019_spend_usage_by_instant", m0019(text, dialect), RUNS_ON_POSTGRES, ["spend_authorizations", "spend_usage"]],
    ["0020_finished_executions_indexes", m0020, RUNS, ["automation_executions"]],
    ["0021_execution_trace_context", m0021(text), RUNS, ["automation_executions"]],
    ["0022_fund_event_triggers", m0022(text), RUNS, ["automation_executions", "automations", "change_versions"]],
    ["0023_execution_reruns", m0023(text), RUNS, ["automation_executions"]],
    ["0024_notification_secrets", m0024(text), RUNS],
    ["0025_audit_events", m0025(text, dialect), RUNS],
    ["0026_audit_filter_indexes", m0026, RUNS, ["audit_events"]],
    ["0027_audit_inbox", m0027(text, dialect), RUNS],
    ["0028_spend_decisions_in_one_call", m0028(dialect), RUNS],
    ["0029_spend_foreign_keys_dropped", m0029(dialect), RUNS, ["spend_authorizations", "spend_ledger", "users"]],
    ["0030_spend_decisions_on_seen_layers", m0030(dialect), RUNS],
  ];
  return steps.map(([name, migration, earlier, locks = []]) => ({ name, migration, earlierReleaseRuns: earlier[dialect], locks: dialect === "postgres" ? locks : [] }));
}

/** This release's migrations as Kysely's Migrator takes them (./migrate.ts runs them; tests migrate part way with it). */
export function migrationsFor(dialect: "sqlite" | "postgres"): MigrationProvider {
  return { getMigrations: async () => Object.fromEntries(migrationSteps(dialect).map((s) => [s.name, s.migration])) };
}
