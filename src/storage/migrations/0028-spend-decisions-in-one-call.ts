// Migration 0028_spend_decisions_in_one_call. Frozen once released: a change is a new migration.
// The release before: functions it does not know of (PostgreSQL; nothing on SQLite): it runs.
import { type Kysely, type Migration, sql } from "kysely";

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
export const m0028 = (dialect: "sqlite" | "postgres"): Migration => ({
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
