// The floor on PostgreSQL (issue 33): each operation one round trip, the call of a PL/pgSQL
// function the floor creates in its own schema (`bench_floor`), sent as a named statement (parsed
// and planned once per connection), committed on its own (autocommit, synchronous_commit as the
// server's database has it). A function's statements run in the caller's transaction, each with a
// snapshot of its own (READ COMMITTED): what is read after the window's lock sees every decision
// committed before it.
import pg from "pg";
import { FLOOR_TABLES, FLOOR_TENANT } from "./floor-schema.js";
import type { FloorAuthorize, FloorCaptureOutcome, FloorDecision, FloorEvent, FloorSeed, FloorStore } from "./floor-store.js";

const SCHEMA = "bench_floor";

/** The three operations. `least` skips nulls: the tightest layer in force, null when none is. */
const FUNCTIONS = [
  `create or replace function floor_authorize(p_key text, p_id text, p_user text, p_app text, p_currency text, p_amount bigint, p_window text, p_now text, p_expires text)
   returns table (o_outcome text, o_id text, o_approved boolean) language plpgsql as $$
   declare
     v_currency text; v_limit bigint; v_spent bigint; v_held bigint; v_approved boolean; v_kept record;
   begin
     select p.currency_code, least(l.limit_nanos, c.cap_nanos, p.limit_nanos) into v_currency, v_limit
       from fund_policy p
       left join app_caps c on c.app_id = p_app
       left join subject_app_limits l on l.user_id = p_user and l.app_id = p_app
       where p.tenant_id = '${FLOOR_TENANT}';
     if v_currency is distinct from p_currency then
       return query select 'wrong-currency', null::text, null::boolean;
       return;
     end if;
     insert into idempotency_records (key, authorization_id) values (p_key, p_id) on conflict (key) do nothing;
     if not found then
       select a.id, a.state, a.user_id, a.app_id, a.amount_nanos into v_kept
         from idempotency_records k join spend_authorizations a on a.id = k.authorization_id where k.key = p_key;
       if v_kept.user_id = p_user and v_kept.app_id = p_app and v_kept.amount_nanos = p_amount then
         return query select 'replay', v_kept.id::text, v_kept.state <> 'DECLINED';
       else
         return query select 'key-reused', null::text, null::boolean;
       end if;
       return;
     end if;
     select u.spent_nanos, u.held_nanos into v_spent, v_held from spend_usage u
       where u.user_id = p_user and u.app_id = p_app and u.window_start = p_window for update;
     if not found then
       insert into spend_usage (user_id, app_id, window_start) values (p_user, p_app, p_window) on conflict do nothing;
       select u.spent_nanos, u.held_nanos into v_spent, v_held from spend_usage u
         where u.user_id = p_user and u.app_id = p_app and u.window_start = p_window for update;
     end if;
     v_approved := v_limit is not null and v_limit - v_spent - v_held >= p_amount;
     insert into spend_authorizations (id, user_id, app_id, window_start, amount_nanos, captured_nanos, state, expires_at, created_at)
       values (p_id, p_user, p_app, p_window, p_amount, 0, case when v_approved then 'PENDING' else 'DECLINED' end, case when v_approved then p_expires end, p_now);
     if v_approved then
       update spend_usage u set held_nanos = u.held_nanos + p_amount where u.user_id = p_user and u.app_id = p_app and u.window_start = p_window;
     end if;
     return query select 'decided', p_id, v_approved;
   end $$`,
  `create or replace function floor_capture(p_id text, p_ledger text, p_now text) returns text language plpgsql as $$
   declare r record;
   begin
     select a.user_id, a.app_id, a.window_start, a.amount_nanos, a.state, a.expires_at into r from spend_authorizations a where a.id = p_id for update;
     if not found then return 'not-found'; end if;
     if r.state <> 'PENDING' or r.expires_at is null or r.expires_at <= p_now then return 'not-pending'; end if;
     update spend_authorizations a set state = 'CAPTURED', captured_nanos = a.amount_nanos where a.id = p_id;
     update spend_usage u set spent_nanos = u.spent_nanos + r.amount_nanos, held_nanos = u.held_nanos - r.amount_nanos
       where u.user_id = r.user_id and u.app_id = r.app_id and u.window_start = r.window_start;
     insert into spend_ledger (id, authorization_id, kind, amount_nanos, at) values (p_ledger, p_id, 'CAPTURE', r.amount_nanos, p_now);
     return 'captured';
   end $$`,
  `create or replace function floor_intake(p_listener text, p_event text, p_execution text, p_context text, p_now text) returns boolean language plpgsql as $$
   begin
     insert into webhook_events (listener_id, event_id, received_at, execution_id) values (p_listener, p_event, p_now, p_execution) on conflict do nothing;
     if not found then return false; end if;
     insert into automation_executions (id, listener_id, event_id, state, context, created_at) values (p_execution, p_listener, p_event, 'PENDING', p_context, p_now);
     return true;
   end $$`,
];

/** Creates the schema, its tables and functions; under a lock, as the bench and a server may both open it. */
async function createSchema(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    await client.query("select pg_advisory_xact_lock(hashtext('bench_floor'))");
    await client.query(`create schema if not exists ${SCHEMA}`);
    for (const statement of [...FLOOR_TABLES, ...FUNCTIONS]) await client.query(statement);
    await client.query("commit");
  } catch (e) {
    await client.query("rollback");
    throw e;
  } finally {
    client.release();
  }
}

export async function openFloorPostgres(url: string, poolSize = 10): Promise<FloorStore> {
  // Every connection resolves the floor's tables and functions in its schema.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, options: `-c search_path=${SCHEMA}` });
  pool.on("error", () => undefined);
  await createSchema(pool);
  const call = async <R extends pg.QueryResultRow>(name: string, args: number, values: unknown[]) =>
    (await pool.query<R>({ name, text: `select * from ${name}(${Array.from({ length: args }, (_, i) => `$${i + 1}`).join(", ")}) as r`, values })).rows[0];

  return {
    authorize: async (a: FloorAuthorize): Promise<FloorDecision> => {
      const row = await call<{ o_outcome: string; o_id: string | null; o_approved: boolean | null }>("floor_authorize", 9, [a.key, a.id, a.userId, a.appId, a.currencyCode, String(a.amountNanos), a.windowStart, a.now, a.expiresAt]);
      if (row?.o_outcome === "decided" || row?.o_outcome === "replay") return { outcome: "decided", id: row.o_id!, approved: row.o_approved!, replay: row.o_outcome === "replay" };
      return { outcome: row?.o_outcome === "key-reused" ? "key-reused" : "wrong-currency" };
    },
    capture: async (id, ledgerId, now) => (await call<{ r: FloorCaptureOutcome }>("floor_capture", 3, [id, ledgerId, now]))!.r,
    intake: async (e: FloorEvent) => (await call<{ r: boolean }>("floor_intake", 5, [e.listenerId, e.eventId, e.executionId, e.body, e.now]))!.r,
    listener: async (path) => {
      const row = (await pool.query<{ listener_id: string; secret: string }>("select listener_id, secret from webhook_listeners where path = $1", [path])).rows[0];
      return row && { listenerId: row.listener_id, secret: row.secret };
    },
    seed: async (s: FloorSeed) => {
      await pool.query("insert into fund_policy (tenant_id, currency_code, limit_nanos) values ($1, $2, null) on conflict (tenant_id) do update set currency_code = excluded.currency_code", [FLOOR_TENANT, s.currencyCode]);
      for (const l of s.limits ?? []) await pool.query("insert into subject_app_limits (user_id, app_id, limit_nanos) values ($1, $2, $3) on conflict (user_id, app_id) do update set limit_nanos = excluded.limit_nanos", [l.userId, l.appId, String(l.limitNanos)]);
      for (const l of s.listeners ?? []) await pool.query("insert into webhook_listeners (path, listener_id, secret) values ($1, $2, $3) on conflict (path) do update set secret = excluded.secret", [l.path, l.listenerId, l.secret]);
    },
    inState: async (userId, appPrefix, state, count) =>
      (await pool.query<{ id: string }>("select id from spend_authorizations where user_id = $1 and app_id like $2 and state = $3 order by id limit $4", [userId, `${appPrefix}%`, state, count])).rows.map((r) => r.id),
    window: async (userId, appId) => {
      const usage = (await pool.query<{ spent: string; held: string }>("select spent_nanos::text as spent, held_nanos::text as held from spend_usage where user_id = $1 and app_id = $2", [userId, appId])).rows[0];
      if (!usage) return undefined;
      const d = (
        await pool.query<{ approved: string; declined: string; approved_nanos: string }>(
          "select count(*) filter (where state <> 'DECLINED') as approved, count(*) filter (where state = 'DECLINED') as declined, coalesce(sum(amount_nanos) filter (where state <> 'DECLINED'), 0)::text as approved_nanos from spend_authorizations where user_id = $1 and app_id = $2",
          [userId, appId],
        )
      ).rows[0]!;
      return { spentNanos: BigInt(usage.spent), heldNanos: BigInt(usage.held), approved: Number(d.approved), declined: Number(d.declined), approvedNanos: BigInt(d.approved_nanos) };
    },
    close: () => pool.end(),
  };
}
