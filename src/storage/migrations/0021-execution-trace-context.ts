// Migration 0021_execution_trace_context. Frozen once released: a change is a new migration.
// The release before: a nullable column it does not know of; rows it inserts leave it null (their
// runs start traces of their own): it runs.
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

/** The trace context of the request that accepted an event, kept with the execution it starts, for the run's span to continue. */
export const m0021 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("automation_executions").addColumn("trace_parent", text).execute();
  },
});
