// This release's migrations in order, one file each (docs/operating.md "Upgrading": expand, then
// contract across two releases). ../migrate-up.ts runs them; append new ones, never edit one that has shipped.
import { type Migration, type MigrationProvider, sql } from "kysely";
import { m0001 } from "./0001-identity-and-funds.js";
import { m0002 } from "./0002-automations-and-webhooks.js";
import { m0003 } from "./0003-execution-queue-index.js";
import { m0004 } from "./0004-lighter-event-writes.js";
import { m0005 } from "./0005-token-failures.js";
import { m0006 } from "./0006-idempotency-records.js";
import { m0007 } from "./0007-instance-heartbeats.js";
import { m0008 } from "./0008-app-service-and-time-zone.js";
import { m0009 } from "./0009-spend-authorizations.js";
import { m0010 } from "./0010-change-versions.js";
import { m0011 } from "./0011-fund-policy-version.js";
import { m0012 } from "./0012-spend-round-trips.js";
import { m0013 } from "./0013-controls-row-write.js";
import { m0014 } from "./0014-controls-row-static.js";
import { m0015 } from "./0015-listeners-version.js";
import { m0016 } from "./0016-spend-held-counter.js";
import { m0017 } from "./0017-spends-currency-index-dropped.js";
import { m0018 } from "./0018-spend-windows-by-start-and-end.js";
import { m0019 } from "./0019-spend-usage-by-instant.js";
import { m0020 } from "./0020-finished-executions-indexes.js";
import { m0021 } from "./0021-execution-trace-context.js";
import { m0022 } from "./0022-fund-event-triggers.js";
import { m0023 } from "./0023-execution-reruns.js";
import { m0025 } from "./0025-audit-events.js";
import { m0026 } from "./0026-audit-filter-indexes.js";
import { m0027 } from "./0027-audit-inbox.js";
import { m0024 } from "./0024-notification-secrets.js";
import { m0028 } from "./0028-spend-decisions-in-one-call.js";
import { m0029 } from "./0029-spend-foreign-keys-dropped.js";
import { m0030 } from "./0030-spend-decisions-on-seen-layers.js";
import { m0031 } from "./0031-notification-delivery.js";
import { m0032 } from "./0032-notification-signing-keys.js";
import { m0033 } from "./0033-webhook-sender-kinds.js";
import { m0034 } from "./0034-spend-authorization-counts.js";
import { m0035 } from "./0035-spend-calls-in-one-body.js";
import { m0036 } from "./0036-spend-usage-by-key.js";
import { type EarlierRelease, RUNS, RUNS_ON_POSTGRES, STOPS, type TextType } from "./migration-kit.js";

export interface MigrationStep {
  name: string;
  migration: Migration;
  /** An instance of the release before the one that adds it keeps working on a database it was applied to, on this dialect. */
  earlierReleaseRuns: boolean;
  /**
   * PostgreSQL: every table that existed before it and that it locks in a mode other than ACCESS
   * SHARE, locked ACCESS EXCLUSIVE before its work (../migration-transaction.ts), so that it never
   * waits for a lock while holding one; test/storage/migration-locks.test.ts holds the list to what
   * the migration takes.
   */
  locks: readonly string[];
}

/** Every migration of this release, in order, for `dialect` (each file says how the release before fares with it). */
export function migrationSteps(dialect: "sqlite" | "postgres"): MigrationStep[] {
  const text: TextType = dialect === "postgres" ? sql`text collate "C"` : "text";
  const steps: Array<[string, Migration, EarlierRelease, (readonly string[])?]> = [
    ["0001_identity_and_funds", m0001(text), RUNS],
    ["0002_automations_and_webhooks", m0002(text), RUNS],
    ["0003_execution_queue_index", m0003, RUNS, ["automation_executions"]],
    ["0004_lighter_event_writes", m0004, STOPS, ["automation_executions", "automations"]],
    ["0005_token_failures", m0005(text), RUNS],
    ["0006_idempotency_records", m0006(text), RUNS],
    ["0007_instance_heartbeats", m0007(text), RUNS],
    ["0008_app_service_and_time_zone", m0008(text), RUNS, ["credentials", "fund_policy"]],
    ["0009_spend_authorizations", m0009(text, dialect), RUNS, ["users"]],
    ["0010_change_versions", m0010(text), RUNS],
    ["0011_fund_policy_version", m0011, RUNS, ["change_versions"]],
    ["0012_spend_round_trips", m0012(dialect), RUNS],
    ["0013_controls_row_write", m0013(dialect), RUNS],
    ["0014_controls_row_static", m0014(dialect), RUNS],
    ["0015_listeners_version", m0015, RUNS, ["change_versions"]],
    ["0016_spend_held_counter", m0016(text, dialect), RUNS, ["spend_authorizations", "spend_usage"]],
    ["0017_spends_currency_index_dropped", m0017, RUNS, ["spend_authorizations"]],
    ["0018_spend_windows_by_start_and_end", m0018(text, dialect), RUNS_ON_POSTGRES, ["spend_authorizations", "spend_usage"]],
    ["0019_spend_usage_by_instant", m0019(text, dialect), RUNS_ON_POSTGRES, ["spend_authorizations", "spend_usage"]],
    ["0020_finished_executions_indexes", m0020, RUNS, ["automation_executions"]],
    ["0021_execution_trace_context", m0021(text), RUNS, ["automation_executions"]],
    ["0022_fund_event_triggers", m0022(text), RUNS, ["automation_executions", "automations", "change_versions"]],
    ["0023_execution_reruns", m0023(text), RUNS, ["automation_executions"]],
    ["0024_notification_secrets", m0024(text), RUNS],
    ["0025_audit_events", m0025(text, dialect), RUNS],
    ["0026_audit_filter_indexes", m0026, RUNS, ["audit_events"]],
    ["0027_audit_inbox", m0027(text, dialect), RUNS],
    ["0028_spend_decisions_in_one_call", m0028(dialect), RUNS],
    ["0029_spend_foreign_keys_dropped", m0029(dialect), RUNS, ["spend_authorizations", "spend_ledger", "users"]],
    ["0030_spend_decisions_on_seen_layers", m0030(dialect), RUNS],
    ["0031_notification_delivery", m0031(text, dialect), RUNS, ["automation_executions"]],
    ["0032_notification_signing_keys", m0032(text), RUNS],
    ["0033_webhook_sender_kinds", m0033(text), RUNS, ["webhook_listeners", "webhook_events"]],
    ["0034_spend_authorization_counts", m0034(dialect), RUNS_ON_POSTGRES, ["spend_usage", "spend_authorizations"]],
    ["0035_spend_calls_in_one_body", m0035(dialect), RUNS],
    ["0036_spend_usage_by_key", m0036(dialect), RUNS],
  ];
  return steps.map(([name, migration, earlier, locks = []]) => ({ name, migration, earlierReleaseRuns: earlier[dialect], locks: dialect === "postgres" ? locks : [] }));
}

/** This release's migrations as Kysely's Migrator takes them (../migrate-up.ts runs them; tests migrate part way with it). */
export function migrationsFor(dialect: "sqlite" | "postgres"): MigrationProvider {
  return { getMigrations: async () => Object.fromEntries(migrationSteps(dialect).map((s) => [s.name, s.migration])) };
}
