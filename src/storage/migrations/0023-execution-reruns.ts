// Migration 0023_execution_reruns. Frozen once released: a change is a new migration.
// The release before: two nullable columns and two partial indexes it does not know of; the rows it
// inserts leave both null (started by their trigger, which they are): it runs. It shows a redrive
// or a replay as any execution.
import { type Kysely, type Migration, sql } from "kysely";
import { type TextType } from "./migration-kit.js";

// Executions run again (src/automations/reruns.ts): what started each (null: its automation's
// trigger, so that the rows every writer inserts without naming it stay right) and the failed one a
// redrive runs again. The indexes are partial, so that the intake's inserts, which set neither
// column, write no entry: the unique one makes a failed execution redriven at most once and answers
// `redrivenBy`; the other finds an event's live replays.
export const m0023 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("automation_executions").addColumn("origin", text).execute();
    await db.schema.alterTable("automation_executions").addColumn("redrive_of", text).execute();
    await sql`create unique index if not exists automation_executions_redrive_of on automation_executions (redrive_of) where redrive_of is not null`.execute(db);
    await sql`create index if not exists automation_executions_replays on automation_executions (automation_id, event_id) where origin = 'AUTOMATION_EXECUTION_ORIGIN_REPLAY'`.execute(db);
  },
});
