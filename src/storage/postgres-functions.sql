-- A SNAPSHOT, not a source: every PostgreSQL function and trigger as the migrations leave them
-- (src/storage/migrations/), read back from a freshly migrated database, to read in one place what
-- a decision runs. Written by `npm run generate:postgres-functions`; never edited by hand: a change
-- is a new migration, then this file generated again (a test fails until it is).

CREATE OR REPLACE FUNCTION public.audit_events_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$ begin raise exception 'audit events are append-only'; end $function$
;

CREATE OR REPLACE FUNCTION public.claim_executions(p_now text, p_lease text, p_limit integer, p_after text)
 RETURNS SETOF automation_executions
 LANGUAGE plpgsql
AS $function$
declare
  v_ids text[];
  v_got text[];
  v_autos text[] := '{}';
  v_auto text;
  v_next text;
  v_wrapped boolean := false;
  v_left integer;
  v_share integer;
begin
  select coalesce(array_agg(id), '{}') into v_ids from (
    select id from automation_executions where state = 'AUTOMATION_EXECUTION_STATE_RUNNING' and lease_until < p_now
    order by created_at, id limit p_limit for update skip locked) lapsed;
  v_left := p_limit - cardinality(v_ids);
  if v_left > 0 then
    select coalesce(array_agg(id), '{}') into v_got from (
      select id from automation_executions where state = 'AUTOMATION_EXECUTION_STATE_PARKED' and next_attempt_at <= p_now
      order by next_attempt_at, id limit (v_left + 1) / 2 for update skip locked) parked;
    v_ids := v_ids || v_got;
    v_left := p_limit - cardinality(v_ids);
  end if;
  v_auto := p_after;
  while cardinality(v_autos) < v_left loop
    select automation_id into v_next from automation_executions where state = 'AUTOMATION_EXECUTION_STATE_PENDING' and automation_id > v_auto
    order by automation_id limit 1;
    if not found then
      exit when v_wrapped or p_after = '';
      v_wrapped := true;
      v_auto := '';
      continue;
    end if;
    exit when v_wrapped and v_next > p_after;
    v_autos := v_autos || v_next;
    v_auto := v_next;
  end loop;
  if cardinality(v_autos) > 0 then
    v_share := (v_left + cardinality(v_autos) - 1) / cardinality(v_autos);
    foreach v_auto in array v_autos loop
      select coalesce(array_agg(id), '{}') into v_got from (
        select id from automation_executions where state = 'AUTOMATION_EXECUTION_STATE_PENDING' and automation_id = v_auto
        order by created_at, id limit least(v_share, p_limit - cardinality(v_ids)) for update skip locked) pending;
      v_ids := v_ids || v_got;
    end loop;
    foreach v_auto in array v_autos loop
      v_left := p_limit - cardinality(v_ids);
      exit when v_left <= 0;
      select coalesce(array_agg(id), '{}') into v_got from (
        select id from automation_executions where state = 'AUTOMATION_EXECUTION_STATE_PENDING' and automation_id = v_auto and id <> all(v_ids)
        order by created_at, id limit v_left for update skip locked) pending;
      v_ids := v_ids || v_got;
    end loop;
  end if;
  v_left := p_limit - cardinality(v_ids);
  if v_left > 0 then
    select coalesce(array_agg(id), '{}') into v_got from (
      select id from automation_executions where state = 'AUTOMATION_EXECUTION_STATE_PARKED' and next_attempt_at <= p_now and id <> all(v_ids)
      order by next_attempt_at, id limit v_left for update skip locked) parked;
    v_ids := v_ids || v_got;
  end if;
  return query update automation_executions set state = 'AUTOMATION_EXECUTION_STATE_RUNNING', lease_until = p_lease, attempts = attempts + 1
    where id = any(v_ids) returning *;
end $function$
;

CREATE OR REPLACE FUNCTION public.spend_add_spent(p_user_id text, p_app_id text, p_at text, p_delta bigint)
 RETURNS void
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
      begin
        if p_delta <> 0 then
          update spend_usage set spent_nanos = spent_nanos + p_delta
          where user_id = p_user_id and app_id = p_app_id and window_end > p_at and window_start <= p_at;
        end if;
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_authorize(p_lock text, p_tenant_id text, p_currency_code text, p_time_zone text, p_default_controls text, p_policy_updated_at text, p_spent bigint, p_held bigint, p_now text, p_id text, p_user_id text, p_app_id text, p_amount bigint, p_captured bigint, p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text, p_entry_id text, p_entry_kind text, p_entry_amount bigint, p_kept_id text, p_kept_fingerprint text, p_kept_owner text, p_kept_answer text, p_kept_created_at text, p_kept_retained text, p_wait boolean)
 RETURNS TABLE(outcome text, spent text, held text)
 LANGUAGE plpgsql
AS $function$
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
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_authorize(p_lock text, p_tenant_id text, p_currency_code text, p_time_zone text, p_default_controls text, p_policy_updated_at text, p_spent bigint, p_held bigint, p_now text, p_id text, p_user_id text, p_app_id text, p_amount bigint, p_captured bigint, p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text, p_entry_id text, p_entry_kind text, p_entry_amount bigint, p_kept_id text, p_kept_fingerprint text, p_kept_owner text, p_kept_answer text, p_kept_created_at text, p_kept_retained text, p_wait boolean, p_check_layers boolean, p_row_controls text, p_cap_controls text)
 RETURNS TABLE(outcome text, spent text, held text)
 LANGUAGE plpgsql
AS $function$
      begin
        return query select d.outcome, d.spent, d.held from spend_authorize(p_lock, p_tenant_id, p_currency_code, p_time_zone, p_default_controls, p_policy_updated_at, p_spent, p_held, p_now,
          p_id, p_user_id, p_app_id, p_amount, p_captured, p_state, p_expires_at, p_window_start, p_window_end, p_decision, p_metadata,
          p_entry_id, p_entry_kind, p_entry_amount, p_kept_id, p_kept_fingerprint, p_kept_owner, p_kept_answer, p_kept_created_at, p_kept_retained,
          p_wait, p_check_layers, p_row_controls, p_cap_controls, null::bigint) d;
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_authorize(p_lock text, p_tenant_id text, p_currency_code text, p_time_zone text, p_default_controls text, p_policy_updated_at text, p_spent bigint, p_held bigint, p_now text, p_id text, p_user_id text, p_app_id text, p_amount bigint, p_captured bigint, p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text, p_entry_id text, p_entry_kind text, p_entry_amount bigint, p_kept_id text, p_kept_fingerprint text, p_kept_owner text, p_kept_answer text, p_kept_created_at text, p_kept_retained text, p_wait boolean, p_check_layers boolean, p_row_controls text, p_cap_controls text, p_counted bigint)
 RETURNS TABLE(outcome text, spent text, held text, counted text)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
      declare
        v_spent bigint;
        v_held bigint;
        v_counted bigint;
        v_through text;
        v_moved bigint;
        v_moved_count bigint;
      begin
        if p_wait then
          perform pg_advisory_xact_lock_shared(hashtextextended(p_lock, 0));
        elsif not pg_try_advisory_xact_lock_shared(hashtextextended(p_lock, 0)) then
          outcome := 'busy'; return next; return;
        end if;
        perform 1 from fund_policy p where p.tenant_id = p_tenant_id and p.currency_code = p_currency_code and p.time_zone = p_time_zone
          and p.default_controls is not distinct from p_default_controls and p.updated_at is not distinct from p_policy_updated_at;
        if not found then
          outcome := 'policy'; return next; return;
        end if;
        if p_check_layers then
          perform 1 where (select l.controls from subject_app_limits l where l.user_id = p_user_id and l.app_id = p_app_id and l.deleted_at is null) is not distinct from p_row_controls
            and (select c.controls from app_caps c where c.app_id = p_app_id and c.deleted_at is null) is not distinct from p_cap_controls;
          if not found then
            outcome := 'layers'; return next; return;
          end if;
        end if;
        if p_wait then
          perform pg_advisory_xact_lock(hashtextextended('spend_usage:' || p_user_id || ':' || p_app_id, 0));
        elsif not pg_try_advisory_xact_lock(hashtextextended('spend_usage:' || p_user_id || ':' || p_app_id, 0)) then
          outcome := 'busy'; return next; return;
        end if;
        -- spend_lock_window: the usage row (made, and seeded by its trigger, on the window's first
        -- decision), corrected by the holds that expired between its held_through and now.
        select u.spent_nanos, u.held_nanos, u.held_count + u.captured_count, u.held_through into v_spent, v_held, v_counted, v_through
        from spend_usage u where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start and window_end = p_window_end;
        if not found then
          insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
          values (p_user_id, p_app_id, p_window_start, p_window_end, 0, 0, p_now)
          on conflict do nothing
          returning spent_nanos, held_nanos, held_count + captured_count, held_through into v_spent, v_held, v_counted, v_through;
          if not found then
            -- Inserted meanwhile by a statement of a release that takes no subject-app lock.
            select u.spent_nanos, u.held_nanos, u.held_count + u.captured_count, u.held_through into v_spent, v_held, v_counted, v_through
            from spend_usage u where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start and window_end = p_window_end;
          end if;
        end if;
        if v_through <> p_now then
          select coalesce(sum(a.amount_nanos), 0), count(*) into v_moved, v_moved_count from spend_authorizations a
          where a.user_id = p_user_id and a.app_id = p_app_id and a.state = 'PENDING'
            and a.expires_at > least(v_through, p_now) and a.expires_at <= greatest(v_through, p_now)
            and a.created_at >= p_window_start and a.created_at < p_window_end;
          if p_now > v_through then
            v_held := v_held - v_moved;
            v_counted := v_counted - v_moved_count;
            if v_moved_count <> 0 then
              update spend_usage set held_nanos = held_nanos - v_moved, held_count = held_count - v_moved_count, held_through = p_now
              where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start and window_end = p_window_end;
            end if;
          else
            v_held := v_held + v_moved;
            v_counted := v_counted + v_moved_count;
          end if;
        end if;
        if v_spent <> p_spent or v_held <> p_held or (p_counted is not null and v_counted <> p_counted) then
          outcome := 'usage'; spent := v_spent::text; held := v_held::text; counted := v_counted::text;
          return next; return;
        end if;
        if p_kept_id is not null then
          insert into idempotency_records as r (id, fingerprint, owner, locked_until, answer, created_at)
          values (p_kept_id, p_kept_fingerprint, p_kept_owner, null, p_kept_answer, p_kept_created_at)
          on conflict (id) do update set fingerprint = excluded.fingerprint, owner = excluded.owner, locked_until = null,
            answer = excluded.answer, created_at = excluded.created_at
          where r.created_at <= p_kept_retained or (r.answer is null and r.locked_until <= p_kept_created_at);
          if not found then
            outcome := 'taken'; return next; return;
          end if;
        end if;
        -- spend_record_authorization: the row (its held trigger counts a hold), its ledger entry, and
        -- what a capture at once spends.
        insert into spend_authorizations (id, user_id, app_id, currency_code, amount_nanos, captured_nanos, reversed_nanos, state,
          expires_at, window_start, window_end, decision, metadata, created_at, updated_at)
        values (p_id, p_user_id, p_app_id, p_currency_code, p_amount, p_captured, 0, p_state,
          p_expires_at, p_window_start, p_window_end, p_decision, p_metadata, p_now, p_now);
        if p_entry_id is not null then
          insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
          values (p_entry_id, p_id, p_user_id, p_app_id, p_window_start, p_entry_kind, p_entry_amount, p_now);
        end if;
        if p_captured <> 0 then
          update spend_usage set spent_nanos = spent_nanos + p_captured
          where user_id = p_user_id and app_id = p_app_id and window_end > p_now and window_start <= p_now;
        end if;
        outcome := 'recorded'; return next;
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_change(p_id text, p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_was_state text, p_was_captured bigint, p_was_reversed bigint, p_state text, p_captured bigint, p_reversed bigint, p_at text, p_first_id text, p_first_kind text, p_first_amount bigint, p_second_id text, p_second_kind text, p_second_amount bigint, p_spent_delta bigint, p_kept_id text, p_kept_fingerprint text, p_kept_owner text, p_kept_answer text, p_kept_created_at text, p_kept_retained text, p_wait boolean)
 RETURNS text
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
      declare
        v_made text;
      begin
        if p_wait then
          perform pg_advisory_xact_lock(hashtextextended('spend_usage:' || p_user_id || ':' || p_app_id, 0));
        elsif not pg_try_advisory_xact_lock(hashtextextended('spend_usage:' || p_user_id || ':' || p_app_id, 0)) then
          return 'busy';
        end if;
        perform 1 from spend_authorizations a
        where a.id = p_id and a.state = p_was_state and a.captured_nanos = p_was_captured and a.reversed_nanos = p_was_reversed;
        if not found then
          return 'stale';
        end if;
        if p_kept_id is not null then
          insert into idempotency_records as r (id, fingerprint, owner, locked_until, answer, created_at)
          values (p_kept_id, p_kept_fingerprint, p_kept_owner, null, p_kept_answer, p_kept_created_at)
          on conflict (id) do update set fingerprint = excluded.fingerprint, owner = excluded.owner, locked_until = null,
            answer = excluded.answer, created_at = excluded.created_at
          where r.created_at <= p_kept_retained or (r.answer is null and r.locked_until <= p_kept_created_at);
          if not found then
            return 'taken';
          end if;
        end if;
        -- spend_record_change: the row (its held trigger moves a hold's counters), its ledger
        -- entries, and what it spends or gives back in the windows holding its instant.
        update spend_authorizations set state = p_state, captured_nanos = p_captured, reversed_nanos = p_reversed, updated_at = p_at
        where id = p_id returning created_at into v_made;
        insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
        values (p_first_id, p_id, p_user_id, p_app_id, p_window_start, p_first_kind, p_first_amount, p_at);
        if p_second_id is not null then
          insert into spend_ledger (id, authorization_id, user_id, app_id, window_start, kind, amount_nanos, at)
          values (p_second_id, p_id, p_user_id, p_app_id, p_window_start, p_second_kind, p_second_amount, p_at);
        end if;
        if p_spent_delta <> 0 then
          update spend_usage set spent_nanos = spent_nanos + p_spent_delta
          where user_id = p_user_id and app_id = p_app_id and window_end > v_made and window_start <= v_made;
        end if;
        return 'changed';
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_held_counter()
 RETURNS trigger
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
      begin
        if tg_op = 'UPDATE' then
          update spend_usage set
    held_nanos = held_nanos - case when held_through < old.expires_at then old.amount_nanos else 0 end,
    held_count = held_count - case when held_through < old.expires_at then 1 else 0 end,
    captured_count = captured_count + case when new.state = 'CAPTURED' then 1 else 0 end
  where user_id = old.user_id and app_id = old.app_id and window_end > old.created_at and window_start <= old.created_at and (held_through < old.expires_at or new.state = 'CAPTURED');
        elsif new.state = 'PENDING' then
          update spend_usage set held_nanos = held_nanos + new.amount_nanos, held_count = held_count + 1 where user_id = new.user_id and app_id = new.app_id and window_end > new.created_at and window_start <= new.created_at and held_through < new.expires_at;
        else
          update spend_usage set captured_count = captured_count + 1 where user_id = new.user_id and app_id = new.app_id and window_end > new.created_at and window_start <= new.created_at;
        end if;
        return null;
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_id_prefix(p_at text)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
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
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_keep_answer(p_id text, p_fingerprint text, p_owner text, p_answer text, p_created_at text, p_retained text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
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
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_lock_row(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_id text)
 RETURNS TABLE(id text, user_id text, app_id text, currency_code text, state text, expires_at text, window_start text, window_end text, decision text, metadata text, created_at text, updated_at text, amount text, captured text, reversed text)
 LANGUAGE plpgsql
AS $function$
      #variable_conflict use_column
      begin
        perform spend_lock_subject_app(p_user_id, p_app_id);
        return query
          select a.id, a.user_id, a.app_id, a.currency_code, a.state, a.expires_at, a.window_start, a.window_end,
            a.decision, a.metadata, a.created_at, a.updated_at, a.amount_nanos::text, a.captured_nanos::text, a.reversed_nanos::text
          from spend_authorizations a where a.id = p_id;
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_lock_subject_app(p_user_id text, p_app_id text)
 RETURNS void
 LANGUAGE sql
AS $function$
        select pg_advisory_xact_lock(hashtextextended('spend_usage:' || p_user_id || ':' || p_app_id, 0))
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_lock_window(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_now text)
 RETURNS TABLE(spent text, held text, counted text)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
      declare
        v_spent bigint;
        v_held bigint;
        v_counted bigint;
        v_through text;
        v_moved bigint;
        v_moved_count bigint;
      begin
        perform spend_lock_subject_app(p_user_id, p_app_id);
        select u.spent_nanos, u.held_nanos, u.held_count + u.captured_count, u.held_through into v_spent, v_held, v_counted, v_through from spend_usage u
        where u.user_id = p_user_id and u.app_id = p_app_id and u.window_start = p_window_start and u.window_end = p_window_end;
        if not found then
          insert into spend_usage (user_id, app_id, window_start, window_end, spent_nanos, held_nanos, held_through)
          values (p_user_id, p_app_id, p_window_start, p_window_end, 0, 0, p_now)
          on conflict do nothing
          returning spent_nanos, held_nanos, held_count + captured_count into v_spent, v_held, v_counted;
          if found then
            return query select v_spent::text, v_held::text, v_counted::text;
            return;
          end if;
          -- Inserted meanwhile by a statement of the release before, which takes no subject-app lock.
          select u.spent_nanos, u.held_nanos, u.held_count + u.captured_count, u.held_through into v_spent, v_held, v_counted, v_through from spend_usage u
          where u.user_id = p_user_id and u.app_id = p_app_id and u.window_start = p_window_start and u.window_end = p_window_end;
        end if;
        select coalesce(sum(a.amount_nanos), 0), count(*) into v_moved, v_moved_count from spend_authorizations a
        where a.user_id = p_user_id and a.app_id = p_app_id and a.state = 'PENDING'
          and a.expires_at > least(v_through, p_now) and a.expires_at <= greatest(v_through, p_now)
          and a.created_at >= p_window_start and a.created_at < p_window_end;
        if p_now > v_through then
          v_held := v_held - v_moved;
          v_counted := v_counted - v_moved_count;
          if v_moved_count <> 0 then
            update spend_usage set held_nanos = held_nanos - v_moved, held_count = held_count - v_moved_count, held_through = p_now
            where user_id = p_user_id and app_id = p_app_id and window_start = p_window_start and window_end = p_window_end;
          end if;
        else
          v_held := v_held + v_moved;
          v_counted := v_counted + v_moved_count;
        end if;
        return query select v_spent::text, v_held::text, v_counted::text;
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_policy_layers(p_lock text, p_tenant_id text, p_user_id text, p_app_id text)
 RETURNS TABLE(currency_code text, time_zone text, default_controls text, updated_at text, user_id text, row_controls text, cap_controls text)
 LANGUAGE plpgsql
AS $function$
      begin
        perform pg_advisory_xact_lock_shared(hashtextextended(p_lock, 0));
        return query
          select p.currency_code, p.time_zone, p.default_controls, p.updated_at,
            (select u.id from users u where u.id = p_user_id),
            (select s.controls from subject_app_limits s where s.user_id = p_user_id and s.app_id = p_app_id and s.deleted_at is null),
            (select c.controls from app_caps c where c.app_id = p_app_id and c.deleted_at is null)
          from fund_policy p where p.tenant_id = p_tenant_id;
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_record_authorization(p_id text, p_user_id text, p_app_id text, p_currency_code text, p_amount bigint, p_captured bigint, p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text, p_at text, p_entry_id text, p_entry_kind text, p_entry_amount bigint, p_entry_at text, p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
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
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_record_change(p_id text, p_state text, p_captured bigint, p_reversed bigint, p_at text, p_user_id text, p_app_id text, p_window_start text, p_first_id text, p_first_kind text, p_first_amount bigint, p_second_id text, p_second_kind text, p_second_amount bigint, p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
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
        $function$
;

CREATE OR REPLACE FUNCTION public.spend_record_change(p_id text, p_state text, p_captured bigint, p_reversed bigint, p_at text, p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_first_id text, p_first_kind text, p_first_amount bigint, p_second_id text, p_second_kind text, p_second_amount bigint, p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
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
        $function$
;

CREATE OR REPLACE FUNCTION public.spend_settle(p_user_id text, p_app_id text, p_window_start text, p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
 RETURNS boolean
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
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
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_settle(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_spent_delta bigint, p_answer_id text, p_answer_owner text, p_answer text)
 RETURNS boolean
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
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
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_try_lock_subject_app(p_user_id text, p_app_id text)
 RETURNS boolean
 LANGUAGE sql
AS $function$
        select pg_try_advisory_xact_lock(hashtextextended('spend_usage:' || p_user_id || ':' || p_app_id, 0))
      $function$
;

CREATE OR REPLACE FUNCTION public.spend_usage_seeded()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      begin
        select coalesce(sum(a.captured_nanos - a.reversed_nanos), 0),
          coalesce(sum(a.amount_nanos) filter (where a.state = 'PENDING' and a.expires_at > new.held_through), 0),
          count(*) filter (where a.state = 'PENDING' and a.expires_at > new.held_through),
          count(*) filter (where a.state = 'CAPTURED')
        into new.spent_nanos, new.held_nanos, new.held_count, new.captured_count
        from spend_authorizations a
        where a.user_id = new.user_id and a.app_id = new.app_id and a.id >= spend_id_prefix(new.window_start) and a.id < spend_id_prefix(new.window_end);
        return new;
      end
      $function$
;

CREATE OR REPLACE FUNCTION public.write_controls_row(p_table text, p_live_key text[], p_lock text, p_policy_lock text, p_tenant_id text, p_currency text, p_seen_controls text, p_row jsonb)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
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
      $function$
;

CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();

CREATE TRIGGER spend_captured_created AFTER INSERT ON spend_authorizations FOR EACH ROW WHEN (new.state = 'CAPTURED'::text) EXECUTE FUNCTION spend_held_counter();

CREATE TRIGGER spend_held_created AFTER INSERT ON spend_authorizations FOR EACH ROW WHEN (new.state = 'PENDING'::text) EXECUTE FUNCTION spend_held_counter();

CREATE TRIGGER spend_held_left AFTER UPDATE OF state ON spend_authorizations FOR EACH ROW WHEN (old.state = 'PENDING'::text AND new.state <> 'PENDING'::text) EXECUTE FUNCTION spend_held_counter();

CREATE TRIGGER spend_usage_seeded BEFORE INSERT ON spend_usage FOR EACH ROW EXECUTE FUNCTION spend_usage_seeded();
