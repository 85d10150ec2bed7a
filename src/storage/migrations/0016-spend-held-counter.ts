// Migration 0016_spend_held_counter. Frozen once released: a change is a new migration.
// The release before: its held sum reads the holds themselves; the counter's columns have defaults
// and the triggers keep them whoever writes the holds: it runs.
import { type Kysely, type Migration, sql } from "kysely";
import { sqliteHeldTriggers, type TextType } from "./migration-kit.js";

// Issue 15: a window's held amount as a counter on its usage row, not a sum over every pending hold.
// The sum read the whole unexpired range of spend_authorizations_held on every decision: linear in
// the window's open holds (bench/RESULTS.md, "Spend decisions"), and under the write lock. Invariant:
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
export const m0016 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
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
