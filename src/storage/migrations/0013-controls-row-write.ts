// Migration 0013_controls_row_write. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration, sql } from "kysely";

// Issue 16, PostgreSQL: a controls row's guarded write in one round trip (src/funds/controls-write.ts).
// It takes the row's lock and the fund policy's shared one, then writes `p_row` (a whole row: inserted
// when no row was live, else the live row updated to it) only if the currency and the live row are
// still as the caller read them; false, writing nothing, when not. A VOLATILE function takes a fresh
// snapshot for each statement, so its checks see what the locks' previous holders committed.
export const m0013 = (dialect: "sqlite" | "postgres"): Migration => ({
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
