// Migration 0034_spend_authorization_counts. Frozen once released: a change is a new migration.
// The release before: on PostgreSQL it runs. Its statements read the usage columns they know, its
// decisions call 0030's spend_authorize, which keeps its signature (it checks the amounts, not the
// count), and every counter is kept by the triggers and spend_lock_window whoever writes; it knows
// no `maxAuthorizations` and does not hold spends to it. On SQLite its window lock sweeps expired
// holds out of held_nanos and moves held_through without taking them out of held_count, which would
// then count them for good: it does not run (`down` undoes this migration for a rollback to it).
import { type Kysely, type Migration, type RawBuilder, sql } from "kysely";
import { sqliteHeldTriggers } from "./migration-kit.js";

/** 0019's usage rows of the authorization `row`: the windows holding its instant. */
const holding = (row: "new" | "old") => sql.raw(`user_id = ${row}.user_id and app_id = ${row}.app_id and window_end > ${row}.created_at and window_start <= ${row}.created_at`);

/** Those whose held counters count the hold `row` (expiring after their held_through). */
const holdingHeld = (row: "new" | "old") => sql`${holding(row)} and held_through < ${sql.raw(`${row}.expires_at`)}`;

/** The authorizations of usage row `u`'s window (its subject, app and instants) matching `where`. */
const windowCount = (where: RawBuilder<unknown>) =>
  sql`(select count(*) from spend_authorizations a where a.user_id = u.user_id and a.app_id = u.app_id
    and a.created_at >= u.window_start and a.created_at < u.window_end and ${where})`;

/** Each existing window's counts, as its counters hold amounts: holds unexpired at its held_through, and captures. */
async function countExisting(db: Kysely<any>): Promise<void> {
  await sql`
    update spend_usage as u set
      held_count = ${windowCount(sql.raw("a.state = 'PENDING' and a.expires_at > u.held_through"))},
      captured_count = ${windowCount(sql.raw("a.state = 'CAPTURED'"))}`.execute(db);
}

/** A hold made: its amount and its place, in the windows whose held counters count it. */
const holdMade = sql`update spend_usage set held_nanos = held_nanos + new.amount_nanos, held_count = held_count + 1 where ${holdingHeld("new")}`;

/** An authorization captured at once: its place, in every window holding its instant. */
const capturedMade = sql`update spend_usage set captured_count = captured_count + 1 where ${holding("new")}`;

/**
 * A hold ended (captured, released): its amount and place out of the held counters that count it
 * and, captured, its place into every window's captured count, in one update of each window's
 * row (a capture's counters change together).
 */
const holdEnded = sql`update spend_usage set
    held_nanos = held_nanos - case when held_through < old.expires_at then old.amount_nanos else 0 end,
    held_count = held_count - case when held_through < old.expires_at then 1 else 0 end,
    captured_count = captured_count + case when new.state = 'CAPTURED' then 1 else 0 end
  where ${holding("old")} and (held_through < old.expires_at or new.state = 'CAPTURED')`;

/** SQLite's counters: 0019's held triggers with the count and the captures, and one for an authorization captured at once. */
async function sqliteCountingTriggers(db: Kysely<any>): Promise<void> {
  await sql`create trigger spend_held_created after insert on spend_authorizations when new.state = 'PENDING' begin ${holdMade}; end`.execute(db);
  await sql`create trigger spend_held_left after update of state on spend_authorizations when old.state = 'PENDING' and new.state <> 'PENDING' begin ${holdEnded}; end`.execute(db);
  await sql`create trigger spend_captured_created after insert on spend_authorizations when new.state = 'CAPTURED' begin ${capturedMade}; end`.execute(db);
}

const SQLITE_TRIGGERS = ["spend_held_created", "spend_held_left", "spend_captured_created"];

/** 0034 undone on SQLite, for a rollback to the release before it: 0019's triggers again, without the counts. */
async function withoutCounts(db: Kysely<any>): Promise<void> {
  for (const name of SQLITE_TRIGGERS) await sql`drop trigger ${sql.raw(name)}`.execute(db);
  await sqliteHeldTriggers(db, holdingHeld);
  await db.schema.alterTable("spend_usage").dropColumn("held_count").execute();
  await db.schema.alterTable("spend_usage").dropColumn("captured_count").execute();
}

// The count of a window (SpendControls.maxAuthorizations): its pending holds that expire after its
// held_through, counted beside their amounts by the same triggers, sweep and seed (held_count), and
// its captured authorizations, which stay counted whatever is reversed (captured_count; only a
// pending hold or a new authorization becomes CAPTURED). A window's
// count at an instant is the two, the held one corrected as the held amount is. Existing rows are
// counted here from their authorizations, under this migration's locks.
export const m0034 = (dialect: "sqlite" | "postgres"): Migration => ({
  ...(dialect === "sqlite" ? { down: withoutCounts } : {}),
  async up(db: Kysely<any>) {
    await db.schema.alterTable("spend_usage").addColumn("held_count", "bigint", (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable("spend_usage").addColumn("captured_count", "bigint", (c) => c.notNull().defaultTo(0)).execute();
    await countExisting(db);
    if (dialect === "sqlite") {
      for (const name of SQLITE_TRIGGERS.slice(0, 2)) await sql`drop trigger ${sql.raw(name)}`.execute(db);
      return sqliteCountingTriggers(db);
    }
    // The held counter's function keeps its name (0019's triggers call it) and now keeps the counts.
    await sql`
      create or replace function spend_held_counter() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' then
          ${holdEnded};
        elsif new.state = 'PENDING' then
          ${holdMade};
        else
          ${capturedMade};
        end if;
        return null;
      end
      $$`.execute(db);
    await sql`
      create trigger spend_captured_created after insert on spend_authorizations
      for each row when (new.state = 'CAPTURED') execute function spend_held_counter()`.execute(db);
    await sql`
      create or replace function spend_usage_seeded() returns trigger language plpgsql as $$
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
      $$`.execute(db);
    // 0019's window lock, answering the count too (a new column: the function is made anew; the
    // callers of the release before read its columns by name).
    await sql`drop function spend_lock_window(text, text, text, text, text)`.execute(db);
    await sql`
      create function spend_lock_window(p_user_id text, p_app_id text, p_window_start text, p_window_end text, p_now text)
      returns table (spent text, held text, counted text) language plpgsql volatile as $$
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
      $$`.execute(db);
    // 0030's decision, checking the window's count it was decided on too (p_counted; null: not
    // checked, for 0030's signature, which now calls this one).
    const parameters = sql.raw(`p_lock text, p_tenant_id text, p_currency_code text, p_time_zone text, p_default_controls text, p_policy_updated_at text,
        p_spent bigint, p_held bigint, p_now text,
        p_id text, p_user_id text, p_app_id text, p_amount bigint, p_captured bigint,
        p_state text, p_expires_at text, p_window_start text, p_window_end text, p_decision text, p_metadata text,
        p_entry_id text, p_entry_kind text, p_entry_amount bigint,
        p_kept_id text, p_kept_fingerprint text, p_kept_owner text, p_kept_answer text, p_kept_created_at text, p_kept_retained text,
        p_wait boolean, p_check_layers boolean, p_row_controls text, p_cap_controls text`);
    const argumentList = sql.raw(`p_lock, p_tenant_id, p_currency_code, p_time_zone, p_default_controls, p_policy_updated_at, p_spent, p_held, p_now,
          p_id, p_user_id, p_app_id, p_amount, p_captured, p_state, p_expires_at, p_window_start, p_window_end, p_decision, p_metadata,
          p_entry_id, p_entry_kind, p_entry_amount, p_kept_id, p_kept_fingerprint, p_kept_owner, p_kept_answer, p_kept_created_at, p_kept_retained,
          p_wait, p_check_layers, p_row_controls, p_cap_controls`);
    await sql`
      create function spend_authorize(${parameters}, p_counted bigint)
      returns table (outcome text, spent text, held text, counted text) language plpgsql volatile as $$
      declare
        v_spent bigint;
        v_held bigint;
        v_counted bigint;
      begin
        if p_wait then
          perform pg_advisory_xact_lock_shared(hashtextextended(p_lock, 0));
        elsif not pg_try_advisory_xact_lock_shared(hashtextextended(p_lock, 0)) then
          return query select 'busy', null::text, null::text, null::text;
          return;
        end if;
        perform 1 from fund_policy p where p.tenant_id = p_tenant_id and p.currency_code = p_currency_code and p.time_zone = p_time_zone
          and p.default_controls is not distinct from p_default_controls and p.updated_at is not distinct from p_policy_updated_at;
        if not found then
          return query select 'policy', null::text, null::text, null::text;
          return;
        end if;
        if p_check_layers then
          perform 1 where (select l.controls from subject_app_limits l where l.user_id = p_user_id and l.app_id = p_app_id and l.deleted_at is null) is not distinct from p_row_controls
            and (select c.controls from app_caps c where c.app_id = p_app_id and c.deleted_at is null) is not distinct from p_cap_controls;
          if not found then
            return query select 'layers', null::text, null::text, null::text;
            return;
          end if;
        end if;
        if p_wait then
          perform spend_lock_subject_app(p_user_id, p_app_id);
        elsif not spend_try_lock_subject_app(p_user_id, p_app_id) then
          return query select 'busy', null::text, null::text, null::text;
          return;
        end if;
        select w.spent::bigint, w.held::bigint, w.counted::bigint into v_spent, v_held, v_counted from spend_lock_window(p_user_id, p_app_id, p_window_start, p_window_end, p_now) w;
        if v_spent <> p_spent or v_held <> p_held or (p_counted is not null and v_counted <> p_counted) then
          return query select 'usage', v_spent::text, v_held::text, v_counted::text;
          return;
        end if;
        if not spend_keep_answer(p_kept_id, p_kept_fingerprint, p_kept_owner, p_kept_answer, p_kept_created_at, p_kept_retained) then
          return query select 'taken', null::text, null::text, null::text;
          return;
        end if;
        perform spend_record_authorization(p_id, p_user_id, p_app_id, p_currency_code, p_amount, p_captured, p_state, p_expires_at,
          p_window_start, p_window_end, p_decision, p_metadata, p_now, p_entry_id, p_entry_kind, p_entry_amount, p_now, p_captured, null, null, null);
        return query select 'recorded', null::text, null::text, null::text;
      end
      $$`.execute(db);
    await sql`
      create or replace function spend_authorize(${parameters})
      returns table (outcome text, spent text, held text) language plpgsql volatile as $$
      begin
        return query select d.outcome, d.spent, d.held from spend_authorize(${argumentList}, null::bigint) d;
      end
      $$`.execute(db);
  },
});
