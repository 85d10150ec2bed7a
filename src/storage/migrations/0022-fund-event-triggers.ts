// Migration 0022_fund_event_triggers. Frozen once released: a change is a new migration.
// The release before: a nullable column, a column with a default, a table and a change version it
// does not know of: it runs. The changes it makes record no fund events, and a save of an
// automation by it keeps the fund-event trigger it cannot see (it never names the column).
import { type Kysely, type Migration } from "kysely";
import { type TextType } from "./migration-kit.js";

/**
 * Fund events as automation triggers (src/automations/fund-triggers.ts): an automation's fund-event
 * trigger, kept on the automation and watched by every instance through its change version; how
 * deep in a chain of fund events an execution is; and the usage thresholds fired, one row per
 * automation, subject, app, window and threshold (the primary key is what makes a threshold fire
 * once, whichever instance's decision crosses it first), swept by window end.
 */
export const m0022 = (text: TextType): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable("automations").addColumn("fund_trigger", text).execute();
    await db.schema.alterTable("automation_executions").addColumn("depth", "integer", (c) => c.notNull().defaultTo(0)).execute();
    await db.schema
      .createTable("fund_threshold_firings")
      .addColumn("automation_id", text, (c) => c.notNull())
      .addColumn("user_id", text, (c) => c.notNull())
      .addColumn("app_id", text, (c) => c.notNull())
      .addColumn("window_start", text, (c) => c.notNull())
      .addColumn("window_end", text, (c) => c.notNull())
      .addColumn("percent", "integer", (c) => c.notNull())
      .addColumn("fired_at", text, (c) => c.notNull())
      .addPrimaryKeyConstraint("fund_threshold_firings_pk", ["automation_id", "user_id", "app_id", "window_start", "window_end", "percent"])
      .execute();
    await db.schema.createIndex("fund_threshold_firings_by_window_end").on("fund_threshold_firings").columns(["window_end"]).execute();
    await db.insertInto("change_versions").values({ name: "fund_triggers", version: 0 }).execute();
  },
});
