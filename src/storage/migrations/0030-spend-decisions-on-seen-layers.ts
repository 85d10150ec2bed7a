// Migration 0030_spend_decisions_on_seen_layers. Frozen once released: a change is a new migration.
// The release before: a function it does not know of (PostgreSQL; nothing on SQLite): it runs.
import { type Kysely, type Migration, sql } from "kysely";

// A decision on the layers this process last saw for the subject and app, in one round trip instead
// of two (the read of the layers and the usage, then the call): 0028's spend_authorize with the
// layers decided on, which, with p_check_layers, it checks after the policy's: the live subject-app
// row's and app cap's controls as they are now ('layers' when either changed, and nothing written).
// 0028's signature stays for an instance of the release before.
export const m0030 = (dialect: "sqlite" | "postgres"): Migration => ({
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
