// Migration 0020_finished_executions_indexes. Frozen once released: a change is a new migration.
// The release before: two indexes it does not know of, on finished executions (which it never
// deletes): it runs.
import { type Kysely, type Migration, sql } from "kysely";

// Bounded storage of executions (src/automations/execution-retention.ts): the finished ones by when
// they finished, for the sweep by age (one range, oldest first), and by automation newest first, for
// the sweep by count (the newest N of an automation read from the index alone). Partial: a pending
// or running execution is in neither, so the intake's insert writes no entry; the final save writes
// both. `if not exists`: on a large table an operator may build them first without blocking writes
// (PostgreSQL's CREATE INDEX CONCURRENTLY, docs/operating.md "Upgrading"), and the migration then finds them.
export const m0020: Migration = {
  async up(db: Kysely<any>) {
    await sql`create index if not exists automation_executions_finished on automation_executions (completed_at) where completed_at is not null`.execute(db);
    await sql`create index if not exists automation_executions_finished_by_automation on automation_executions (automation_id, created_at, id) where completed_at is not null`.execute(db);
  },
};
