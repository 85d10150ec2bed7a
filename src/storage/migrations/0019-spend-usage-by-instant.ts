// Migration 0019_spend_usage_by_instant. Frozen once released: a change is a new migration.
// The release before: on PostgreSQL its decisions run in the functions, which seed a window's
// dropped usage row from the window's spends; its GetEffective reads the row itself and shows a
// window whose row was dropped as nothing spent or held until a decision in it (of either release)
// seeds the row. On SQLite its window lock makes a dropped row anew with nothing spent or held: it
// approves what the window's limit no longer allows.
import { type Kysely, type Migration, sql } from "kysely";
import { createUsageTable, dropHeldTriggers, holdsByWindowKey, sqliteHeldTriggers, type TextType } from "./migration-kit.js";

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
export const m0019 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
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
