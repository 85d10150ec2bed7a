// Migration 0014_controls_row_static. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration, sql } from "kysely";

// Issue 16, PostgreSQL: write_controls_row with static statements per table instead of dynamic SQL.
// A dynamic statement (EXECUTE) is parsed and planned on every call; static ones are planned once per
// connection and kept. Same signature and behaviour: `p_live_key` is no longer read (each table's
// live key is written out), and is kept so that an instance still running the previous release
// calls it unchanged during a rolling upgrade. `p_row` is a whole row, as before.
export const m0014 = (dialect: "sqlite" | "postgres"): Migration => ({
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
