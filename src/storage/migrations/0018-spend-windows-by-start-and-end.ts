// Migration 0018_spend_windows_by_start_and_end. Frozen once released: a change is a new migration.
// The release before: on PostgreSQL it runs (the functions it calls keep their signatures, see the
// migration); on SQLite its window lock's upsert names the old key and fails: every decision 500.
import { type Kysely, type Migration, sql } from "kysely";
import { createUsageTable, dropHeldTriggers, holdsByWindowKey, type TextType, windowKeyRows } from "./migration-kit.js";

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
export const m0018 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
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
