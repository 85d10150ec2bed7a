// Migration 0012_spend_round_trips. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration, sql } from "kysely";

// Issue 15, PostgreSQL only: the round trips of a decision or a change fold what were separate
// statements (src/funds/effective.ts, src/funds/spends/spend-writes.ts). All are VOLATILE functions: each
// statement in them takes its own snapshot, so what is read after a lock (the layers after the
// policy's shared lock, a row after its window's) sees what was committed while it waited, as a
// separate statement after the lock would. The kept answer's update (spend_settle) is
// IdempotencyRecords.completeIn's; since the spend operations take no claim (src/http/idempotency.ts)
// only an instance of an earlier release passes an answer to it.
export const m0012 = (dialect: "sqlite" | "postgres"): Migration => ({
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
