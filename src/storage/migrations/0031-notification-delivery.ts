// Migration 0031_notification_delivery. Frozen once released: a change is a new migration.
// The release before: a nullable column, two partial indexes and a table it does not know of; it
// neither claims nor writes a parked execution, and shows one with a state it does not know (its
// response validation, off in production, refuses it): it runs.
import { type Kysely, type Migration, sql } from "kysely";
import { type TextType } from "./migration-kit.js";

// Executions that wait between a notification's attempts (src/automations/execution-claims.ts):
// parked, holding no lease, until `next_attempt_at` (kept when it is claimed, so that a claim tells
// the parked from the pending it took). The indexes are partial, so the intake's
// inserts of running executions write no entry: the parked ones by when they are due; the pending
// ones by automation, oldest first, for claims fair across automations (one seek finds the next
// automation with pending executions, one more its oldest). The health of the destinations
// notifications go to (src/automations/notification-destinations.ts): a row for each that failed,
// its consecutive failures, its circuit, and when it was disabled.
export const m0031 = (text: TextType, dialect: "sqlite" | "postgres"): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("automation_executions").addColumn("next_attempt_at", text).execute();
    await sql`create index if not exists automation_executions_parked on automation_executions (next_attempt_at, id) where state = 'AUTOMATION_EXECUTION_STATE_PARKED'`.execute(db);
    await sql`create index if not exists automation_executions_pending_by_automation on automation_executions (automation_id, created_at, id) where state = 'AUTOMATION_EXECUTION_STATE_PENDING'`.execute(db);
    await db.schema
      .createTable("notification_destinations")
      .addColumn("id", text, (c) => c.primaryKey())
      .addColumn("destination", text, (c) => c.notNull())
      .addColumn("consecutive_failures", "integer", (c) => c.notNull())
      .addColumn("failing_since", text)
      .addColumn("open_until", text)
      .addColumn("disabled_at", text)
      .addColumn("last_error", text)
      .addColumn("updated_at", text, (c) => c.notNull())
      .execute();
    if (dialect === "postgres") await sql.raw(CLAIM_EXECUTIONS).execute(db);
  },
});

// One round trip per claim: runs whose lease lapsed, oldest first; then parked executions that are
// due, up to half of what is left; then pending ones, shared among the automations that have any,
// in turn from the one after `p_after`; then parked ones again for what is still left. SKIP LOCKED
// lets claimers pass each other.
const CLAIM_EXECUTIONS = `
create function claim_executions(p_now text, p_lease text, p_limit integer, p_after text)
returns setof automation_executions language plpgsql volatile as $$
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
end $$`;
