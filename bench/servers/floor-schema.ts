// The floor's tables (issue 33), the same on both databases (SQL types both accept): only what an
// exact decision, capture and intake need, each with its primary key and no other index. On
// PostgreSQL they live in the schema `bench_floor` of the bench's database; on SQLite in a file of
// their own. Reviewed statement by statement in bench/RESULTS.md, "The least a correct decision does".

export const FLOOR_TABLES = [
  // The fund policy (one tenant): its currency and the default limit a window, null for none.
  "create table if not exists fund_policy (tenant_id text primary key, currency_code text not null, limit_nanos bigint)",
  // The app cap, over every subject of the app.
  "create table if not exists app_caps (app_id text primary key, cap_nanos bigint not null)",
  // The subject-app limit.
  "create table if not exists subject_app_limits (user_id text not null, app_id text not null, limit_nanos bigint not null, primary key (user_id, app_id))",
  // A window's usage: the row every decision of the window locks, and what it decides on.
  "create table if not exists spend_usage (user_id text not null, app_id text not null, window_start text not null, spent_nanos bigint not null default 0, held_nanos bigint not null default 0, primary key (user_id, app_id, window_start))",
  // Every decision, approved or not, and its state.
  "create table if not exists spend_authorizations (id text primary key, user_id text not null, app_id text not null, window_start text not null, amount_nanos bigint not null, captured_nanos bigint not null, state text not null, expires_at text, created_at text not null)",
  // An Idempotency-Key and the decision it made: what a replay answers again.
  "create table if not exists idempotency_records (key text primary key, authorization_id text not null)",
  // One entry per posting of an authorization (the capture's).
  "create table if not exists spend_ledger (id text primary key, authorization_id text not null, kind text not null, amount_nanos bigint not null, at text not null)",
  // The webhook listeners: a path, and the secret its deliveries are signed with.
  "create table if not exists webhook_listeners (path text primary key, listener_id text not null, secret text not null)",
  // Every accepted event of a listener: its primary key refuses a duplicate.
  "create table if not exists webhook_events (listener_id text not null, event_id text not null, received_at text not null, execution_id text not null, primary key (listener_id, event_id))",
  // The executions to run; ids are time-ordered, so the oldest pending are a range of the primary key.
  "create table if not exists automation_executions (id text primary key, listener_id text not null, event_id text not null, state text not null, context text not null, created_at text not null)",
] as const;

/** The tenant of the floor's fund policy. */
export const FLOOR_TENANT = "default";
