// Migration 0004_lighter_event_writes. Frozen once released: a change is a new migration.
// The release before: drops automations.last_executed_at, which its webhook intake wrote: every
// delivery 500.
import { type Kysely, type Migration } from "kysely";

// Two costs of every accepted event removed. The queue index serves both kinds of claim (pending,
// and running with a lapsed lease: few rows), so the runnable index only cost every insert and state
// change of an execution. automations.last_executed_at is read from the executions instead.
export const m0004: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.dropIndex("automation_executions_runnable").execute();
    await db.schema.alterTable("automations").dropColumn("last_executed_at").execute();
  },
};
