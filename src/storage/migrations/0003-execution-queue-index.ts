// Migration 0003_execution_queue_index. Frozen once released: a change is a new migration.
// The release before: new tables, columns with defaults, indexes, rows and functions it does not
// know of, or functions replaced with the signatures it calls: it runs. (0010, 0011, 0015: it does
// not bump the change versions, so an instance of the later release sees its changes to
// credentials, the fund policy and listeners only once what it keeps of them is read anew.)
import { type Kysely, type Migration } from "kysely";

// The worker claims the oldest pending execution: an index in that order among pending rows, so a
// claim is one index seek however long the backlog or the history of finished runs.
export const m0003: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex("automation_executions_queue").on("automation_executions").columns(["state", "created_at", "id"]).execute();
  },
};
