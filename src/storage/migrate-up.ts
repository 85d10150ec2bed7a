// Brings a database's schema to this release's, every pending migration once even when several
// instances start together, each in a transaction of its own (./migration-transaction.ts); or says
// why this release may not run on it: it is another application's, it lacks migrations this release
// needs and may not apply them (MIGRATE_AT_START=0), or a later release applied migrations that
// were not written to run with this one. The policy is docs/operating.md "Upgrading"; the records,
// in ./migration-records.ts.
import { sql, type Kysely } from "kysely";
import { StartRefused } from "../config.js";
import type { Logger } from "../core/logger.js";
import { ensureRecordTables, readState, recordApplied, recordCompatibility, type MigrationState } from "./migration-records.js";
import { inMigrationTransaction, MIGRATION_TRANSACTION_DEFAULTS, type MigrationTransactionOptions } from "./migration-transaction.js";
import { migrationSteps, type MigrationStep } from "./migrations/migration-list.js";
import { RELEASES, type Release } from "./releases.js";

export interface MigrationPlan {
  steps: MigrationStep[];
  releases: readonly Release[];
}

export const planFor = (dialect: "sqlite" | "postgres"): MigrationPlan => ({ steps: migrationSteps(dialect), releases: RELEASES });

/** What a database where `step` was applied requires of a release: the last migration of the release before `step` if that one runs with it, else `step` itself. */
export function compatibleFrom(step: MigrationStep, releases: readonly Release[]): string {
  const before = step.earlierReleaseRuns ? releases.filter((r) => r.lastMigration < step.name).at(-1) : undefined;
  return before?.lastMigration ?? step.name;
}

const RECOVER = "run that release, or restore the database's backup from before it was migrated";

/** Refuses a database where a migration this release does not know was applied, unless its record says a release that knows what this one knows runs with it. */
function refuseLaterRelease(plan: MigrationPlan, state: MigrationState): void {
  const known = new Set(plan.steps.map((s) => s.name));
  const last = plan.steps.at(-1)!.name;
  for (const name of state.applied.filter((n) => !known.has(n))) {
    const from = state.compatibleFrom.get(name);
    if (from === undefined) throw new StartRefused(`the database has migration ${name}, applied by a later release, and no record of which releases run with it; this release knows migrations up to ${last}: ${RECOVER}`);
    if (!known.has(from)) throw new StartRefused(`the database has migration ${name}, applied by a later release that runs only with releases that know migration ${from}; this release knows migrations up to ${last}: ${RECOVER}`);
  }
}

const pendingSteps = (plan: MigrationPlan, state: MigrationState) => plan.steps.filter((s) => !state.applied.includes(s.name));

/** Applied steps that kysely_migration does not name: kept through a rollback to a release that checks it (./migration-records.ts). */
const hiddenSteps = (plan: MigrationPlan, state: MigrationState) => plan.steps.filter((s) => state.applied.includes(s.name) && !state.named.has(s.name));

/** Migrations applied before their records were kept (by an earlier release). */
const unrecordedSteps = (plan: MigrationPlan, state: MigrationState) => plan.steps.filter((s) => state.applied.includes(s.name) && !state.compatibleFrom.has(s.name));

export interface MigrateOptions extends MigrationTransactionOptions {
  /** Told of each step applied (or named again, when kept hidden through a rollback). */
  onApplied?: (step: string) => void;
}

/** A server's migrations at start, logged: each step applied, and each retry of one that did not get its locks. */
export const loggedMigrations = (logger: Logger): Partial<MigrateOptions> => ({
  onApplied: (migration) => logger.info({ msg: "migration applied", migration }),
  onRetry: ({ step, attempt, attempts, cause, pauseMs }) => logger.warn({ msg: "migration did not get its locks: trying again", migration: step, cause, attempt, attempts, pauseMs }),
});

/** Applies each pending step, in order, in a transaction of its own with its record; a hidden one is named again without running. Answers the steps applied. */
async function applyPending(db: Kysely<any>, dialect: "sqlite" | "postgres", plan: MigrationPlan, state: MigrationState, options: MigrateOptions): Promise<string[]> {
  const unrecorded = unrecordedSteps(plan, state).map((s) => ({ name: s.name, compatible_from: compatibleFrom(s, plan.releases) }));
  await inMigrationTransaction(db, dialect, { name: "(the records of migrations)", locks: [] }, async (trx) => {
    await ensureRecordTables(trx);
    await recordCompatibility(trx, unrecorded);
  }, options);
  const hidden = new Set(hiddenSteps(plan, state).map((s) => s.name));
  const applied: string[] = [];
  for (const step of plan.steps.filter((s) => hidden.has(s.name) || !state.applied.includes(s.name))) {
    const ran = await inMigrationTransaction(
      db,
      dialect,
      hidden.has(step.name) ? { name: step.name, locks: [] } : step,
      async (trx) => {
        // Another process (SQLite) may have applied it since the state was read: its record says so.
        if (!hidden.has(step.name) && (await readState(trx, dialect)).applied.includes(step.name)) return false;
        if (!hidden.has(step.name)) await step.migration.up(trx);
        await recordApplied(trx, step.name, compatibleFrom(step, plan.releases));
        return true;
      },
      options,
    ).catch((e: unknown) => {
      const previous = plan.steps[plan.steps.indexOf(step) - 1];
      const kept = previous ? `the migrations before it are applied (up to ${previous.name})` : "it is the first";
      throw new Error(`database migration ${step.name} failed, rolled back: ${e instanceof Error ? e.message : String(e)}; ${kept}: run the migrations again once the cause is mended`);
    });
    if (!ran) continue;
    applied.push(step.name);
    options.onApplied?.(step.name);
  }
  return applied;
}

async function migrateOnce(db: Kysely<any>, dialect: "sqlite" | "postgres", plan: MigrationPlan, options: MigrateOptions): Promise<string[]> {
  const state = await readState(db, dialect);
  refuseLaterRelease(plan, state);
  const work = pendingSteps(plan, state).length + hiddenSteps(plan, state).length + unrecordedSteps(plan, state).length;
  return work > 0 ? applyPending(db, dialect, plan, state, options) : [];
}

/**
 * The migrations applied to the database (none: a new one) and those this release would apply;
 * refuses (StartRefused) another application's database, and one a later release migrated beyond
 * what this release runs with. Changes nothing.
 */
export async function migrationStatus(db: Kysely<any>, dialect: "sqlite" | "postgres", plan: MigrationPlan = planFor(dialect)): Promise<{ applied: string[]; pending: string[] }> {
  const state = await readState(db, dialect);
  refuseLaterRelease(plan, state);
  return { applied: state.applied, pending: pendingSteps(plan, state).map((s) => s.name) };
}

/** Runs `work` holding the migrations' lock: on PostgreSQL a session advisory lock, on its own connection for the whole run, so that instances take turns. */
export async function underMigrationLock<T>(db: Kysely<any>, dialect: "sqlite" | "postgres", work: () => Promise<T>): Promise<T> {
  // SQLite: each step takes the write lock and checks its record under it (applyPending).
  if (dialect === "sqlite") return work();
  return db.connection().execute(async (lockHolder) => {
    await sql`select pg_advisory_lock(hashtextextended('tenant-api:migrations', 0))`.execute(lockHolder);
    try {
      return await work();
    } finally {
      await sql`select pg_advisory_unlock(hashtextextended('tenant-api:migrations', 0))`.execute(lockHolder);
    }
  });
}

/**
 * Applies this release's pending migrations (`apply`), or only checks that there are none; either
 * way refuses (StartRefused) a database that is not this service's or that a later release migrated
 * beyond what this one runs with. Answers the names of the migrations applied.
 */
export async function migrateDatabase(db: Kysely<any>, dialect: "sqlite" | "postgres", apply: boolean, plan: MigrationPlan = planFor(dialect), options: MigrateOptions = MIGRATION_TRANSACTION_DEFAULTS): Promise<string[]> {
  if (!apply) {
    const { pending } = await migrationStatus(db, dialect, plan);
    if (pending.length === 0) return [];
    const names = pending.length === 1 ? pending[0] : `${pending[0]} to ${pending.at(-1)}`;
    throw new StartRefused(`the database lacks ${pending.length} migration(s) this release needs (${names}) and MIGRATE_AT_START=0: run \`npm run migrate\` of this release first`);
  }
  return underMigrationLock(db, dialect, () => migrateOnce(db, dialect, plan, options));
}
