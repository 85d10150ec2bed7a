// Brings a database's schema to this release's, every pending migration once even when several
// instances start together; or says why this release may not run on it: it lacks migrations this
// release needs and may not apply them (MIGRATE_AT_START=0), or a later release applied migrations
// that were not written to run with this one. The policy is at the top of ./migrations.ts.
import { type Kysely, type Migration, Migrator, sql } from "kysely";
import { StartRefused } from "../config.js";
import { migrationSteps, type MigrationStep } from "./migrations.js";
import { RELEASES, type Release } from "./releases.js";

/** Kysely's record of the applied migrations (its Migrator's default table). */
const APPLIED = "kysely_migration";

/**
 * For each applied migration, `compatible_from`: the last migration of the oldest release that runs
 * on a database where it was applied. A release runs on the database if it knows, for each applied
 * migration, that one. Kept beside Kysely's record, as its own tables are.
 */
const COMPATIBILITY = "migration_compatibility";

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

interface State {
  applied: string[];
  compatibleFrom: Map<string, string>;
}

async function readState(db: Kysely<any>): Promise<State> {
  const tables = new Set((await db.introspection.getTables({ withInternalKyselyTables: true })).map((t) => t.name));
  const applied = tables.has(APPLIED) ? await db.selectFrom(APPLIED).select("name").execute() : [];
  const records = tables.has(COMPATIBILITY) ? await db.selectFrom(COMPATIBILITY).select(["name", "compatible_from"]).execute() : [];
  return { applied: applied.map((r: { name: string }) => r.name).sort(), compatibleFrom: new Map(records.map((r: { name: string; compatible_from: string }) => [r.name, r.compatible_from])) };
}

const RECOVER = "run that release, or restore the database's backup from before it was migrated";

/** Refuses a database where a migration this release does not know was applied, unless its record says a release that knows what this one knows runs with it. */
function refuseLaterRelease(plan: MigrationPlan, state: State): void {
  const known = new Set(plan.steps.map((s) => s.name));
  const last = plan.steps.at(-1)!.name;
  for (const name of state.applied.filter((n) => !known.has(n))) {
    const from = state.compatibleFrom.get(name);
    if (from === undefined) throw new StartRefused(`the database has migration ${name}, applied by a later release, and no record of which releases run with it; this release knows migrations up to ${last}: ${RECOVER}`);
    if (!known.has(from)) throw new StartRefused(`the database has migration ${name}, applied by a later release that runs only with releases that know migration ${from}; this release knows migrations up to ${last}: ${RECOVER}`);
  }
}

function pendingSteps(plan: MigrationPlan, state: State): MigrationStep[] {
  const applied = new Set(state.applied);
  return plan.steps.filter((s) => !applied.has(s.name));
}

const record = (step: MigrationStep, releases: readonly Release[]) => ({ name: step.name, compatible_from: compatibleFrom(step, releases) });

/** Migrations applied before their records were kept (by an earlier release). */
const unrecordedSteps = (plan: MigrationPlan, state: State) => plan.steps.filter((s) => state.applied.includes(s.name) && !state.compatibleFrom.has(s.name));

/** Records the unrecorded migrations, then applies the pending ones, each with its record in its transaction; answers their names. */
async function applyPending(db: Kysely<any>, plan: MigrationPlan, state: State): Promise<string[]> {
  await db.schema.createTable(COMPATIBILITY).ifNotExists().addColumn("name", "text", (c) => c.primaryKey()).addColumn("compatible_from", "text", (c) => c.notNull()).execute();
  const unrecorded = unrecordedSteps(plan, state);
  if (unrecorded.length > 0) {
    await db
      .insertInto(COMPATIBILITY)
      .values(unrecorded.map((s) => record(s, plan.releases)))
      .onConflict((oc) => oc.column("name").doNothing())
      .execute();
  }
  const known = new Set(plan.steps.map((s) => s.name));
  const migrations: Record<string, Migration> = {};
  for (const step of plan.steps) {
    migrations[step.name] = {
      async up(trx: Kysely<any>) {
        await step.migration.up(trx);
        await trx.insertInto(COMPATIBILITY).values(record(step, plan.releases)).execute();
      },
    };
  }
  // A later release's, which runs with this one (refuseLaterRelease): listed so that Kysely's Migrator finds every applied migration, never run.
  for (const name of state.applied.filter((n) => !known.has(n))) {
    migrations[name] = {
      up: async () => {
        throw new Error(`${name} is a later release's migration`);
      },
    };
  }
  const { error, results } = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) throw new Error(`database migration ${failed?.migrationName ?? ""} failed: ${error instanceof Error ? error.message : String(error)}`);
  return (results ?? []).map((r) => r.migrationName);
}

async function migrateOnce(db: Kysely<any>, plan: MigrationPlan): Promise<string[]> {
  const state = await readState(db);
  refuseLaterRelease(plan, state);
  return pendingSteps(plan, state).length > 0 || unrecordedSteps(plan, state).length > 0 ? applyPending(db, plan, state) : [];
}

/**
 * The migrations applied to the database (none: not a database of this service, or a new one) and
 * those this release would apply; refuses (StartRefused) a database a later release migrated beyond
 * what this release runs with. Changes nothing.
 */
export async function migrationStatus(db: Kysely<any>, dialect: "sqlite" | "postgres", plan: MigrationPlan = planFor(dialect)): Promise<{ applied: string[]; pending: string[] }> {
  const state = await readState(db);
  refuseLaterRelease(plan, state);
  return { applied: state.applied, pending: pendingSteps(plan, state).map((s) => s.name) };
}

const SQLITE_MIGRATION_ATTEMPTS = 5;

/**
 * Applies this release's pending migrations (`apply`), or only checks that there are none; either
 * way refuses (StartRefused) a database a later release migrated beyond what this one runs with.
 * Answers the names of the migrations applied.
 * - PostgreSQL: a session advisory lock, held on its own connection for the whole run, makes the
 *   instances take turns (Kysely's migrator locks only once its own tables exist, and creating those
 *   concurrently can fail).
 * - SQLite: Kysely runs all pending migrations in one transaction but takes no lock first, so a
 *   second process can start from a stale view and fail when it writes. The run is atomic, so the
 *   loser rolls back cleanly and tries again, and then finds nothing to do.
 */
export async function migrateDatabase(db: Kysely<any>, dialect: "sqlite" | "postgres", apply: boolean, plan: MigrationPlan = planFor(dialect)): Promise<string[]> {
  if (!apply) {
    const { pending } = await migrationStatus(db, dialect, plan);
    if (pending.length === 0) return [];
    const names = pending.length === 1 ? pending[0] : `${pending[0]} to ${pending.at(-1)}`;
    throw new StartRefused(`the database lacks ${pending.length} migration(s) this release needs (${names}) and MIGRATE_AT_START=0: run \`npm run migrate\` of this release first`);
  }
  if (dialect === "sqlite") {
    for (let attempt = 1; ; attempt++) {
      try {
        return await migrateOnce(db, plan);
      } catch (e) {
        if (e instanceof StartRefused || attempt >= SQLITE_MIGRATION_ATTEMPTS) throw e;
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  }
  return db.connection().execute(async (lockHolder) => {
    await sql`select pg_advisory_lock(hashtextextended('tenant-api:migrations', 0))`.execute(lockHolder);
    try {
      return await migrateOnce(db, plan);
    } finally {
      await sql`select pg_advisory_unlock(hashtextextended('tenant-api:migrations', 0))`.execute(lockHolder);
    }
  });
}
